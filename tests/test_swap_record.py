"""A folder swap knows its own folders by its record in the data folder, not by a mark that can be copied or forged
(issue 49): a reader (ask, evaluate, load_program) never deletes or moves anything; a write repairs only what a
recorded swap left, by the identity of each folder, and names what else looks like it; a genuine interrupted swap is
still repaired by the next write."""

from __future__ import annotations

import json
import logging
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, clean_env, killed_once_it_prints, run_script

from bookrag.atomic_file import folder_to_read
from bookrag.errors import BadArgumentError
from programs.compile.artifact import MANIFEST_KEYS, read_manifest, write_artifact

TOKEN = "0123456789abcdef0123456789abcdef"  # as a swap's token looks


class SavedProgram:
    """What write_artifact needs of a program: `save`."""

    def save(self, path: str) -> None:
        Path(path).write_text("{}")


def manifest(version: str) -> dict:
    return dict.fromkeys(MANIFEST_KEYS, version)


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder`, with a file's bytes."""
    return {str(path.relative_to(folder)): path.read_bytes() if path.is_file() else None
            for path in sorted(folder.rglob("*"))}


def forged_swap(folder: Path) -> None:
    """What the report forged beside `folder`: a staging folder holding the old mark with a swap's id and the user's
    thesis, and a folder of the user's named as the previous one moved aside."""
    staging, old = (folder.with_name(f".{folder.name}.{step}-{TOKEN}") for step in ("writing", "old"))
    staging.mkdir(parents=True)
    old.mkdir()
    (staging / ".bookrag-swap").write_text(TOKEN)
    (staging / "thesis.docx").write_bytes(b"PK\x03\x04 my thesis")
    (old / "notes.txt").write_text("mine")


def left_alone(folder: Path) -> str:
    return f"left .{folder.name}.old-{TOKEN}, .{folder.name}.writing-{TOKEN} beside {folder} as they are"


def test_ask_leaves_a_forged_swap_beside_a_missing_program_as_it_is(tmp_path):
    """`ask.py --program D/art` deleted thesis.docx and moved D/.art.old-X to D/art."""
    program = tmp_path / "D" / "art"
    forged_swap(program)
    before = tree(program.parent)
    done = run_script("ask.py", "--answer-mode", "extractive", "--program", program, "What is a node?",
                      cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")))
    assert done.returncode == 4, done.stderr
    assert f"--program {program} is not a folder" in done.stderr
    assert left_alone(program) in done.stderr
    assert tree(program.parent) == before


def test_a_write_leaves_a_forged_swap_in_its_path_as_it_is_and_names_it(tmp_path, data_dir, caplog):
    out = tmp_path / "D" / "art"
    forged_swap(out)
    before = tree(out.parent)
    with caplog.at_level(logging.WARNING):
        write_artifact(SavedProgram(), out, manifest("next"), data_dir)
    assert read_manifest(out)["lm"] == "next"
    assert {path: data for path, data in tree(out.parent).items() if not path.startswith("art")} == before
    assert left_alone(out) in caplog.text


def test_a_forged_mark_inside_an_artifact_deletes_nothing(tmp_path, data_dir):
    """The old mark inside the target said "swapped in, remove the previous folder": `.art.old-<id>` went."""
    out = write_artifact(SavedProgram(), tmp_path / "D" / "art", manifest("previous"), data_dir)
    (out / ".bookrag-swap").write_text(TOKEN)
    (out.with_name(f".art.old-{TOKEN}")).mkdir()
    (out.with_name(f".art.old-{TOKEN}") / "notes.txt").write_text("mine")
    before = tree(out.parent)
    assert read_manifest(folder_to_read(out, data_dir))["lm"] == "previous"
    with pytest.raises(BadArgumentError, match=r"holds files bookrag did not write \(\.bookrag-swap\)"):
        write_artifact(SavedProgram(), out, manifest("next"), data_dir)
    assert tree(out.parent) == before


# -- a genuine swap, killed at each step in a process of its own -------------------------------------------------

KILLS = {  # what the swap did before it was killed, in place of its two renames
    "mid-fill": "pass",
    "between-renames": "os.replace(self.target, self.old)",
    "after-renames": "os.replace(self.target, self.old); os.replace(self.staging, self.target)",
}


@pytest.fixture
def previous(tmp_path, data_dir) -> Path:
    return write_artifact(SavedProgram(), tmp_path / "D" / "art", manifest("previous"), data_dir)


def killed_swap(out: Path, data_dir: Path, done: str) -> None:
    """A write of `out` in another process, killed once it has `done` its renames' part."""
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(PROJECT_ROOT)!r})
        from pathlib import Path
        from bookrag.atomic_file import FolderSwap
        from bookrag.output_folder import OutputFolder
        from programs.compile.artifact import ARTIFACT_OUTPUT

        def killed(self):
            {done}
            print("killed here", flush=True)
            time.sleep(60)

        def fill(staging):
            (staging / "manifest.json").write_text({json.dumps(manifest("killed"))!r})
            (staging / "program.json").write_text("{{}}")

        FolderSwap.swap_in = killed
        OutputFolder(Path({str(out)!r}), ARTIFACT_OUTPUT).replace_whole(fill, Path({str(data_dir)!r}))
    """)
    killed_once_it_prints(script, "killed here")


@pytest.mark.parametrize("done", KILLS.values(), ids=KILLS)
def test_a_genuine_swap_killed_at_any_step_is_repaired_by_the_next_write(previous, data_dir, done):
    killed_swap(previous, data_dir, done)
    assert len(list((data_dir / "swaps").iterdir())) == 1  # its record, which the kill left
    write_artifact(SavedProgram(), previous, manifest("next"), data_dir)
    assert read_manifest(previous)["lm"] == "next"
    assert sorted(p.name for p in previous.parent.iterdir()) == ["art"]
    assert list((data_dir / "swaps").iterdir()) == []


def test_between_the_renames_a_reader_reads_the_previous_artifact_where_it_lies(previous, data_dir):
    killed_swap(previous, data_dir, KILLS["between-renames"])
    before = tree(previous.parent)
    aside = folder_to_read(previous, data_dir)
    assert aside.name == next(previous.parent.glob(".art.old-*")).name
    assert read_manifest(aside)["lm"] == "previous"
    assert tree(previous.parent) == before and not previous.exists()


def test_a_copy_of_a_killed_swaps_folders_elsewhere_matches_no_record(previous, data_dir, tmp_path):
    killed_swap(previous, data_dir, KILLS["between-renames"])
    elsewhere = tmp_path / "E" / "art"
    shutil.copytree(previous.parent, elsewhere.parent)
    before = tree(elsewhere.parent)
    assert folder_to_read(elsewhere, data_dir) == elsewhere  # no previous artifact to read there
    write_artifact(SavedProgram(), elsewhere, manifest("next"), data_dir)
    assert {path: data for path, data in tree(elsewhere.parent).items() if not path.startswith("art")} == before
    assert not previous.exists()  # the genuine swap is still to repair, by a write of its own folder


def test_a_folder_put_in_place_of_the_one_moved_aside_is_not_taken_for_it(previous, data_dir, caplog):
    """Same path, same files, but not the folder the swap moved aside (its identity differs): left, and named."""
    killed_swap(previous, data_dir, KILLS["between-renames"])
    aside = next(previous.parent.glob(".art.old-*"))
    shutil.copytree(aside, aside.with_name("copy"))
    shutil.rmtree(aside)
    aside.with_name("copy").rename(aside)
    with caplog.at_level(logging.WARNING):
        write_artifact(SavedProgram(), previous, manifest("next"), data_dir)
    assert read_manifest(previous)["lm"] == "next" and read_manifest(aside)["lm"] == "previous"
    assert f"left {aside.name} beside {previous} as they are" in caplog.text
