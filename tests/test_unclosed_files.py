"""A test session ends without an unclosed file: Python reports each at exit as a ResourceWarning, which ended the
suite's output twice (llama-cpp-python opens /dev/null twice when it is imported and never closes it)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from conftest import PROJECT_ROOT

# As the local engine does: imported in a test, when the first answer is asked for.
LOADS_LLAMA_CPP = "def test_llama_cpp_is_loaded():\n    import llama_cpp\n\n    assert llama_cpp.__version__\n"


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_a_session_that_loaded_llama_cpp_ends_without_a_resource_warning(tmp_path):
    """A session of this suite's conftest (as a plugin) over one test module that imports llama_cpp, with every
    ResourceWarning shown."""
    (tmp_path / "test_loads_llama_cpp.py").write_text(LOADS_LLAMA_CPP)
    result = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "conftest", "--rootdir", str(tmp_path), "test_loads_llama_cpp.py"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "tests")}, capture_output=True, text=True,
        timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "1 passed" in result.stdout, output
    assert "ResourceWarning" not in output, output
