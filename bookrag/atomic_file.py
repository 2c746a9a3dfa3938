"""A file or a folder replaced whole or not at all: written under a temporary name beside it, then moved over the
target (`os.replace` is atomic on one file system), so a killed run never leaves half of one where a whole one was."""

from __future__ import annotations

import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

# The file that marks a folder as staged by a folder swap of ours; it holds the swap's id.
SWAP_MARK = ".bookrag-swap"


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """`write(temp_path)`, then move the finished file over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(temp)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return path


def replace_folder(target: Path, fill: Callable[[Path], None]) -> None:
    """`fill(staging)` a fresh sibling folder, then swap it in for `target`: a killed run leaves the previous folder
    intact (killed between the two renames, moved aside, which `restore_folder` puts back). What killed runs left
    is repaired or removed first, recognised by its mark (`FolderSwap`): a folder of the user's that only looks
    like one (`.<name>.old-mine`) is never touched. Two runs writing the same folder at once are not supported."""
    target.parent.mkdir(parents=True, exist_ok=True)
    restore_folder(target)
    for folder in target.parent.glob(f".{target.name}.writing-*"):
        if stale := FolderSwap.marked_in(folder, target):
            shutil.rmtree(stale.staging, ignore_errors=True)
    swap = FolderSwap.begin(target)
    try:
        fill(swap.staging)
        swap.swap_in()
    finally:
        shutil.rmtree(swap.staging, ignore_errors=True)
    swap.finish()


def restore_folder(folder: Path) -> None:
    """Repair what a `replace_folder` killed mid-swap left, recognised by its mark: killed between its two renames
    (no folder, the previous one moved aside), put the previous folder back; killed after them, remove the previous
    folder and the mark. A folder without our mark is never touched.

    The one repair of that state; every reader of such a folder calls it before looking at it.
    """
    folder = Path(os.path.realpath(folder))  # through a link: its folder was moved aside, not the link
    if folder.exists():
        if swapped := FolderSwap.marked_in(folder, folder):
            swapped.finish()
        return
    interrupted = [swap for staging in folder.parent.glob(f".{folder.name}.writing-*")
                   if (swap := FolderSwap.marked_in(staging, folder)) and swap.old.is_dir()]
    if interrupted:
        swap = max(interrupted, key=lambda s: s.old.stat().st_mtime)
        os.replace(swap.old, folder)
        shutil.rmtree(swap.staging, ignore_errors=True)
        log.warning("restored %s from an interrupted write", folder)


class FolderSwap:
    """One replacement of `target` by `replace_folder`, named by an id only this run holds: the new folder is staged
    as `.<name>.writing-<id>` and the previous one moved aside as `.<name>.old-<id>`. The staged folder holds
    SWAP_MARK (the id) from its creation until the previous folder is gone, so what a killed swap left is
    recognised by that mark, never by a name the user may have given a folder of their own."""

    def __init__(self, target: Path, swap_id: str):
        self.target, self.id = target, swap_id
        self.staging = target.with_name(f".{target.name}.writing-{swap_id}")
        self.old = target.with_name(f".{target.name}.old-{swap_id}")

    @classmethod
    def begin(cls, target: Path) -> FolderSwap:
        """A new swap: its staging folder made and marked."""
        swap = cls(target, uuid.uuid4().hex)
        swap.staging.mkdir()
        (swap.staging / SWAP_MARK).write_text(swap.id, encoding="ascii")
        return swap

    @classmethod
    def marked_in(cls, folder: Path, target: Path) -> FolderSwap | None:
        """The swap of `target` whose mark `folder` holds (as its staging folder, or as `target` itself once
        swapped in); None for a folder no swap of ours marked."""
        mark = folder / SWAP_MARK
        if not mark.is_file():  # not a FIFO or a device someone put there: a read would block or never end
            return None
        try:
            with mark.open("rb") as handle:
                swap_id = handle.read(64).decode("ascii")
        except (OSError, UnicodeDecodeError):
            return None
        swap = cls(target, swap_id) if re.fullmatch(r"[0-9a-f]{32}", swap_id) else None
        return swap if swap and folder in (swap.staging, target) else None

    def swap_in(self) -> None:
        """The two renames: the previous folder aside, the staged one in its place (the previous one put back if
        that fails)."""
        if self.target.exists():
            os.replace(self.target, self.old)
        try:
            os.replace(self.staging, self.target)
        except BaseException:
            if self.old.exists() and not self.target.exists():
                os.replace(self.old, self.target)
            raise

    def finish(self) -> None:
        """Remove the previous folder, then the mark: a run killed in between is finished by `restore_folder`."""
        shutil.rmtree(self.old, ignore_errors=True)
        if self.old.exists():  # a previous folder we could not delete is not left hidden without a word
            log.warning("could not remove the previous %s, moved aside to %s: remove it yourself", self.target.name,
                        self.old)
        (self.target / SWAP_MARK).unlink(missing_ok=True)
