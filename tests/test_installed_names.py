"""What installing bookrag puts on the import path: its three packages and commands named bookrag-*, no module of a
generic name (`import evaluate` must find Hugging Face's `evaluate`, a common neighbour of DSPy, not our script).

The installed distribution's tests read this environment's install: after changing pyproject.toml, reinstall
(`pip install --no-deps -e .`)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import sysconfig
import tomllib
from importlib.metadata import distribution
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, clean_env

COMMANDS = ("ask", "evaluate", "optimize", "ingest", "train_reader")
SCRIPTS = {f"bookrag-{name.replace('_', '-')}": f"programs.cli.{name}:command" for name in COMMANDS}
PACKAGES = {"bookrag", "programs", "retrievers"}


def declared() -> dict:
    with open(PROJECT_ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


def test_pyproject_installs_only_the_three_packages_and_no_top_level_module():
    setuptools = declared()["tool"]["setuptools"]
    assert "py-modules" not in setuptools
    assert {package.split(".")[0] for package in setuptools["packages"]} == PACKAGES


def test_each_command_is_a_console_script_of_its_package_module():
    scripts = declared()["project"]["scripts"]
    assert scripts == SCRIPTS
    for target in scripts.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), target


def test_the_installed_distribution_adds_no_generic_top_level_name():
    installed = distribution("bookrag")
    assert set(installed.read_text("top_level.txt").split()) == PACKAGES
    assert {ep.name: ep.value for ep in installed.entry_points if ep.group == "console_scripts"} == SCRIPTS


@pytest.mark.parametrize("name", COMMANDS)
def test_outside_the_repository_a_generic_import_does_not_find_our_script(name, tmp_path):
    where = f"import importlib.util; spec = importlib.util.find_spec({name!r}); print(spec and spec.origin)"
    result = subprocess.run([sys.executable, "-c", where], cwd=tmp_path, env=clean_env(), capture_output=True,
                            text=True, check=True)
    origin = result.stdout.strip()
    assert origin == "None" or not Path(origin).resolve().is_relative_to(PROJECT_ROOT), origin


def test_an_installed_command_runs_with_the_exit_codes_of_its_script(tmp_path):
    """bookrag-ingest is ingest.py: --help exits 0, a flag it lacks exits 4 (bad usage), from any folder."""
    script = Path(sysconfig.get_path("scripts")) / "bookrag-ingest"
    shown = subprocess.run([script, "--help"], cwd=tmp_path, env=clean_env(), capture_output=True, text=True,
                           check=False)
    assert shown.returncode == 0 and "--recreate" in shown.stdout, shown.stderr
    refused = subprocess.run([script, "--no-such-flag"], cwd=tmp_path, env=clean_env(), capture_output=True,
                             text=True, check=False)
    assert refused.returncode == 4 and "--no-such-flag" in refused.stderr
