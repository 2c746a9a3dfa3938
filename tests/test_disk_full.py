"""A full disk under the data folder: ingest and ask exit 3 with "no space left on <path>" and what is free, never
the engine's SIGBUS ("Bus error", exit 135), and a refused ingest leaves the previous index answering.

Each test mounts a real, small file system (tmpfs, or ext4 on a loop device; root only); where mounting is not
allowed the tests skip saying so.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SMALL_BOOK, FakeEmbedder, clean_env, run_script, write_book

from bookrag.disk_space import MB
from bookrag.errors import StoreError
from retrievers.embedding_cache import CachedEmbedder

OTHER_BOOK = {
    "01-arm/01-joints.md": """
        # Arm Joints

        The wrist joint of the teaching arm turns through two hundred degrees.
        """,
}


def mount(disk: Path, *how: str) -> None:
    disk.mkdir()
    mounted = subprocess.run(["mount", *how, str(disk)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here to fill: {mounted.stderr.strip() or 'not root'}")


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 64 MB tmpfs: room for the small book's index (17 MB on tmpfs) and for the test to fill."""
    mount(tmp_path / "disk", "-t", "tmpfs", "-o", "size=64m", "tmpfs")
    yield tmp_path / "disk"
    subprocess.run(["umount", "--lazy", str(tmp_path / "disk")], check=False)


@pytest.fixture
def small_ext4(tmp_path: Path):
    """A 64 MB ext4 file system in a file, mounted through a loop device: a disk, where the engine's files stay
    sparse."""
    image = tmp_path / "ext4.img"
    with open(image, "wb") as f:
        f.truncate(64 * MB)
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 is not installed")
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    mount(tmp_path / "disk", "-o", "loop", str(image))
    yield tmp_path / "disk"
    subprocess.run(["umount", "--lazy", str(tmp_path / "disk")], check=False)


def fill(disk: Path, leave: int) -> None:
    """Write a real file until `leave` bytes stay free."""
    with open(disk / "filler", "ab") as filler:
        filler.write(bytes(shutil.disk_usage(disk).free - leave))


def env_for(data: Path, book: Path) -> dict[str, str]:
    return clean_env(BOOKRAG_DATA_DIR=str(data), BOOKRAG_BOOK=str(book))


def ask(data: Path, book: Path, cwd: Path):
    return run_script("ask.py", "What does the zephyrine reliability profile keep?", "--answer-mode", "extractive",
                      cwd=cwd, env=env_for(data, book), timeout=120)


def assert_no_space(result, data: Path) -> None:
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert f"error: no space left on {data}" in result.stderr and " MB free" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_ingest_that_would_fill_the_disk_exits_3_and_the_previous_index_still_answers(small_disk, tmp_path):
    data, book = small_disk / "data", write_book(tmp_path / "book", SMALL_BOOK)
    assert run_script("ingest.py", book, cwd=tmp_path, env=env_for(data, book)).returncode == 0
    assert ask(data, book, tmp_path).returncode == 0  # the first load allocates the vector file (tmpfs)
    fill(small_disk, leave=10 * MB)

    other = write_book(tmp_path / "other-book", OTHER_BOOK)
    refused = run_script("ingest.py", other, cwd=tmp_path, env=env_for(data, other))
    assert_no_space(refused, data)  # main: the engine's SIGBUS, exit 135
    recreated = run_script("ingest.py", book, "--recreate", cwd=tmp_path, env=env_for(data, book))
    assert_no_space(recreated, data)  # refused before the drop

    answered = ask(data, book, tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert "zephyrine" in answered.stdout and "/docs/ros2/nodes#quality-of-service" in answered.stdout


def test_ask_on_a_nearly_full_disk_exits_3_naming_it(small_disk, tmp_path):
    data, book = small_disk / "data", write_book(tmp_path / "book", SMALL_BOOK)
    assert run_script("ingest.py", book, cwd=tmp_path, env=env_for(data, book)).returncode == 0
    fill(small_disk, leave=10 * MB)  # loading the index needs 32 MB on tmpfs: it fills its sparse vector file
    assert_no_space(ask(data, book, tmp_path), data)  # main: "Bus error", exit 135
    fill(small_disk, leave=1 * MB)
    assert_no_space(ask(data, book, tmp_path), data)  # below the floor for the caches


def test_a_disk_filling_up_under_the_embedding_cache_is_named_as_full(small_disk):
    cache = CachedEmbedder(FakeEmbedder(), small_disk / "data" / "embedding-cache.sqlite")
    fill(small_disk, leave=0)
    with pytest.raises(StoreError, match=rf"no space left on {small_disk / 'data'} \(\d[\d,]* bytes free\)"):
        cache.embed_documents([f"passage number {i} about the arm" * 20 for i in range(2000)])
    cache._db.close()
    with pytest.raises(StoreError, match=r"no space left on .* free, 8\.0 MB needed"):
        CachedEmbedder(FakeEmbedder(), small_disk / "data" / "embedding-cache.sqlite")


def test_on_a_disk_the_index_loads_with_little_room_left(small_ext4, tmp_path):
    """tmpfs needs room for the vector file's holes (the test above); a disk does not, so ask is not refused."""
    data, book = small_ext4 / "data", write_book(tmp_path / "book", SMALL_BOOK)
    assert run_script("ingest.py", book, cwd=tmp_path, env=env_for(data, book)).returncode == 0
    fill(small_ext4, leave=10 * MB)
    answered = ask(data, book, tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert "zephyrine" in answered.stdout
