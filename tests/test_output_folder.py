"""The `--out` guard on real folders: bookrag replaces only what it wrote, and says so before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from bookrag.config import Settings
from bookrag.errors import BadArgumentError
from bookrag.output_folder import OutputFolder
from programs.compile.artifact import ARTIFACT_OUTPUT, MANIFEST_KEYS
from programs.evaluate.report_files import REPORT_OUTPUT


@pytest.fixture
def user_settings(tmp_path, monkeypatch) -> Settings:
    """A book under tmp_path/p, a data folder beside it; the current folder elsewhere."""
    (tmp_path / "p" / "book").mkdir(parents=True)
    (tmp_path / "p" / "book" / "intro.md").write_text("# Intro\n\nThe user's only copy.\n")
    (tmp_path / "work" / "cwd").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work" / "cwd")
    return Settings(book_dir=tmp_path / "p" / "book", data_dir=tmp_path / "data")


def claim(path, settings, kind=ARTIFACT_OUTPUT) -> Path:
    return OutputFolder(Path(path), kind).claim(settings)


def refused(path, settings, kind=ARTIFACT_OUTPUT) -> str:
    with pytest.raises(BadArgumentError) as caught:
        claim(path, settings, kind)
    assert caught.value.exit_code == 4
    return str(caught.value)


def test_a_new_folder_an_empty_one_and_one_of_ours_may_be_written(tmp_path, user_settings):
    assert claim(tmp_path / "new" / "deeper", user_settings) == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # checking creates nothing
    (tmp_path / "empty").mkdir()
    claim(tmp_path / "empty", user_settings)
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "manifest.json").write_text(json.dumps(dict.fromkeys(MANIFEST_KEYS, "x")))
    claim(artifact, user_settings)
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.json").write_text(json.dumps({"settings": {}, "programs": {}}))
    claim(report, user_settings, REPORT_OUTPUT)
    assert list((tmp_path / "empty").iterdir()) == []  # the write probe leaves nothing behind
    assert sorted(p.name for p in report.iterdir()) == ["report.json"]


def test_a_folder_of_the_users_files_is_refused_and_named(tmp_path, user_settings):
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "cat.jpg").write_bytes(b"\xff\xd8")
    message = refused(photos, user_settings)
    assert message.startswith(f"--out {photos} holds files that are not a bookrag compiled program (no manifest.json of ours)")
    assert (photos / "cat.jpg").read_bytes() == b"\xff\xd8"


@pytest.mark.parametrize("marker, text", [
    ("manifest.json", '{"name": "my-web-app", "icons": []}'),  # a web app's manifest, not ours
    ("manifest.json", "not json"),
    ("manifest.json", "[1, 2]"),
    ("report.json", '{"settings": {}}'),  # ours has both keys
])
def test_a_marker_file_that_is_not_ours_does_not_make_the_folder_ours(tmp_path, user_settings, marker, text):
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / marker).write_text(text)
    kind = ARTIFACT_OUTPUT if marker == "manifest.json" else REPORT_OUTPUT
    assert "holds files that are not a bookrag" in refused(folder, user_settings, kind)


def test_a_regular_file_is_refused(tmp_path, user_settings):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    assert refused(notes, user_settings, REPORT_OUTPUT) == f"--out {notes} is a file, not a folder: name a new " \
                                                           "folder, or one bookrag wrote"
    assert notes.read_text() == "mine"


def test_the_book_and_every_folder_holding_it_are_refused(tmp_path, user_settings):
    assert "is the book" in refused(user_settings.book_dir, user_settings)
    assert "holds the book" in refused(tmp_path / "p", user_settings)
    assert "holds the book" in refused(tmp_path / "p" / ".." / "p", user_settings)
    assert "holds the book" in refused("/", user_settings)


def test_the_data_folder_the_project_and_the_current_folder_are_refused(tmp_path, user_settings):
    assert "is the data folder" in refused(user_settings.data_dir, user_settings)
    assert "is the bookrag project" in refused(PROJECT_ROOT, user_settings)
    assert "holds the bookrag project" in refused(PROJECT_ROOT.parent, user_settings)
    assert "is the current folder" in refused(".", user_settings)
    assert "holds the current folder" in refused("..", user_settings)


def test_a_path_under_a_regular_file_is_refused(tmp_path, user_settings):
    (tmp_path / "notes.txt").write_text("mine")
    message = refused(tmp_path / "notes.txt" / "out" / "deeper", user_settings)
    assert message == f"--out {tmp_path / 'notes.txt' / 'out' / 'deeper'} is under {tmp_path / 'notes.txt'}, " \
                      "which is a file, not a folder"


def test_a_folder_that_cannot_be_written_is_refused_with_the_reason(tmp_path, user_settings):
    """A real failing write: sysfs refuses new files even to root, whom permission bits would let through."""
    assert refused("/sys/bookrag-out", user_settings).endswith("cannot be written (/sys: Permission denied)")


def test_a_folder_another_run_is_writing_is_refused_whatever_its_data_folder(tmp_path, user_settings):
    """Two trainings (or compiles) into one --out, each with its own data folder, would each swap over the other's
    output: the second claim is refused, naming the run that holds it, until that run ends."""
    import subprocess
    import sys

    out = tmp_path / "reader"
    claim_elsewhere = (  # the claim of a run with another data folder
        "import time; from pathlib import Path; from bookrag.config import Settings; "
        "from bookrag.output_folder import OutputFolder; from programs.compile.artifact import ARTIFACT_OUTPUT; "
        f"OutputFolder(Path({str(out)!r}), ARTIFACT_OUTPUT).claim(Settings(book_dir=Path("
        f"{str(user_settings.book_dir)!r}), data_dir=Path({str(tmp_path / 'other')!r})))")
    holder = subprocess.Popen([sys.executable, "-c", f"{claim_elsewhere}; print('held', flush=True); time.sleep(60)"],
                              cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        message = refused(out, user_settings)
        assert f"is being written by another bookrag run (pid {holder.pid})" in message
        assert "name another folder" in message
    finally:
        holder.kill()
        holder.wait()
    assert claim(out, user_settings) == out  # the run ended: the folder is free
    assert claim(out, user_settings) == out  # and this process's own claim holds it again, as often as it asks
    OutputFolder(out, ARTIFACT_OUTPUT).replace_whole(
        lambda staging: (staging / "manifest.json").write_text(json.dumps(dict.fromkeys(MANIFEST_KEYS, "x"))),
        user_settings.data_dir)
    taker = subprocess.run([sys.executable, "-c", claim_elsewhere],  # written: another run may take it now
                           cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert taker.returncode == 0, taker.stderr
