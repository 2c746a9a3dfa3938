"""A file or a folder replaced whole or not at all: written under a temporary name beside it, then moved over the
target (`os.replace` is atomic on one file system), so a killed run never leaves half of one where a whole one was."""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from bookrag.json_document import read_json_file

log = logging.getLogger(__name__)

# Under the data folder: a record of each folder swap this machine started and has not finished.
SWAP_RECORDS = "swaps"


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


def replace_folder(target: Path, fill: Callable[[Path], None], data_dir: Path) -> None:
    """`fill(staging)` a fresh sibling folder, then swap it in for `target` by two renames: a killed run leaves the
    previous folder usable (killed between the renames, moved aside: `folder_to_read` finds it there, and the next
    `replace_folder` of `target` puts it back). What killed swaps left is repaired first, and only where a swap
    recorded in `data_dir` made it (`FolderSwap`): a folder copied, forged or named like one of ours
    (`.<name>.old-mine`) is never touched, only named in a warning. Two runs writing the same folder at once are not
    supported."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for interrupted in FolderSwap.recorded(target, data_dir):
        interrupted.repair()
    warn_of_look_alikes(target)
    swap = FolderSwap.begin(target, data_dir)
    try:
        fill(swap.staging)
        swap.swap_in()
    finally:
        swap.repair()  # swapped: the previous folder goes; failed: the staging folder goes, the previous one stays


def folder_to_read(folder: Path, data_dir: Path) -> Path:
    """`folder`; or, while a swap of it recorded in `data_dir` is interrupted between its two renames, the previous
    folder it moved aside, to read where it lies. Moves and deletes nothing: only a write repairs a swap."""
    folder = Path(folder)
    if folder.exists():
        return folder
    target = Path(os.path.realpath(folder))  # through a link: its folder was moved aside, not the link
    recorded = FolderSwap.recorded(target, data_dir)
    for interrupted in recorded:
        if interrupted.moved_aside():
            log.warning("%s was moved aside to %s by a write killed before it finished: reading it there; the next "
                        "write to %s puts it back, or move it back yourself", folder, interrupted.old, folder)
            return interrupted.old
    warn_of_look_alikes(target, recorded)
    return folder


def warn_of_look_alikes(target: Path, recorded: Iterable[FolderSwap] = ()) -> None:
    """Name the folders beside `target` that are named as a swap names its own but that none of the `recorded`
    swaps (those not repaired yet) made: they are left as they are."""
    name = glob.escape(target.name)
    known = {path for swap in recorded for path in (swap.staging, swap.old)}
    strays = sorted(path.name for pattern in (f".{name}.writing-*", f".{name}.old-*")
                    for path in target.parent.glob(pattern) if path not in known)
    if strays:
        log.warning("left %s beside %s as they are: they are named like what an interrupted bookrag write leaves, but "
                    "no write recorded in this data folder made them; if one is the previous %s, move it back "
                    "yourself", ", ".join(strays), target, target.name)


class FolderSwap:
    """One replacement of `target` by `replace_folder`, named by a token only this run holds: the new folder is staged
    as `.<name>.writing-<token>` and the previous one moved aside as `.<name>.old-<token>`.

    Before anything is moved, the swap is recorded in the data folder, which a copied output folder never brings
    along: the target, the token, and the identity (device, inode) of the staging folder and of the previous folder.
    A rename keeps a folder's identity, so a repair touches a folder only when it is the one this swap made or moved
    aside; a folder copied, forged or renamed by hand matches no record. The record goes when the swap ends."""

    def __init__(self, target: Path, token: str, data_dir: Path, staged: list | None = None,
                 previous: list | None = None):
        self.target, self.token = target, token
        self.staging = target.with_name(f".{target.name}.writing-{token}")
        self.old = target.with_name(f".{target.name}.old-{token}")
        self.record = Path(data_dir) / SWAP_RECORDS / f"{token}.json"
        self.staged, self.previous = staged, previous  # identities: [device, inode]

    @classmethod
    def begin(cls, target: Path, data_dir: Path) -> FolderSwap:
        """A new swap: its staging folder made, and the swap recorded."""
        swap = cls(target, uuid.uuid4().hex, data_dir)
        swap.staging.mkdir()
        swap.staged, swap.previous = identity(swap.staging), identity(target)
        swap.record.parent.mkdir(parents=True, exist_ok=True)
        record = {"target": str(target), "token": swap.token, "staged": swap.staged, "previous": swap.previous}
        atomic_write(swap.record, lambda temp: temp.write_text(json.dumps(record), encoding="utf-8"))
        return swap

    @classmethod
    def recorded(cls, target: Path, data_dir: Path) -> list[FolderSwap]:
        """The swaps of `target` recorded in `data_dir` and not finished (a record that is not one is skipped)."""
        swaps = []
        for path in sorted((Path(data_dir) / SWAP_RECORDS).glob("*.json")):
            try:
                record = read_json_file(path)
                swap = cls(Path(record["target"]), record["token"], data_dir, record["staged"], record["previous"])
            except (OSError, ValueError, TypeError, KeyError):
                continue
            if swap.target == target and swap.record == path and re.fullmatch(r"[0-9a-f]{32}", swap.token):
                swaps.append(swap)
        return swaps

    def moved_aside(self) -> bool:
        """Killed between the two renames: no `target`, the previous folder aside."""
        return not os.path.lexists(self.target) and is_the(self.old, self.previous)

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

    def repair(self) -> None:
        """One whole folder at `target` from whatever this swap left: swapped in, the previous folder removed; moved
        aside, put back; the staging folder removed. Only the folders with the recorded identities are touched;
        then the record goes."""
        if self.moved_aside():
            os.replace(self.old, self.target)
            log.warning("restored %s from an interrupted write", self.target)
        elif is_the(self.old, self.previous) and is_the(self.target, self.staged):
            shutil.rmtree(self.old, ignore_errors=True)
            if self.old.exists():  # a previous folder we could not delete is not left hidden without a word
                log.warning("could not remove the previous %s, moved aside to %s: remove it yourself",
                            self.target.name, self.old)
        if is_the(self.staging, self.staged):
            shutil.rmtree(self.staging, ignore_errors=True)
        self.record.unlink(missing_ok=True)


def identity(path: Path) -> list[int] | None:
    """The device and inode of `path` itself (a link is not followed), as a record holds them; None for nothing."""
    try:
        status = os.lstat(path)
    except OSError:
        return None
    return [status.st_dev, status.st_ino]


def is_the(path: Path, recorded: list[int] | None) -> bool:
    """Whether `path` is the very folder whose identity a record holds."""
    return recorded is not None and identity(path) == recorded
