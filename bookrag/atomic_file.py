"""A file or a folder replaced whole or not at all: written under a temporary name beside it, then moved over the
target (`os.replace` is atomic on one file system), so a killed run never leaves half of one where a whole one was."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


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
    intact (killed between the two renames, as `.<name>.old-*`, which `restore_folder` puts back). Staging folders
    that killed runs left behind are removed first; two runs writing the same folder at once are not supported."""
    target.parent.mkdir(parents=True, exist_ok=True)
    restore_folder(target)
    for stale in (*target.parent.glob(f".{target.name}.old-*"), *target.parent.glob(f".{target.name}.writing-*")):
        shutil.rmtree(stale, ignore_errors=True)
    staging = target.with_name(f".{target.name}.writing-{uuid.uuid4().hex[:8]}")
    staging.mkdir()
    try:
        fill(staging)
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
        if target.exists():
            os.replace(target, old)
        os.replace(staging, target)
        shutil.rmtree(old, ignore_errors=True)
        if old.exists():  # a previous folder we could not delete is not left hidden without a word
            log.warning("could not remove the previous %s, moved aside to %s: remove it yourself", target.name, old)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def restore_folder(folder: Path) -> None:
    """A `replace_folder` killed between its two renames leaves only `.<name>.old-*`: put the previous folder back.

    The one repair of that state; every reader of such a folder calls it before looking at it.
    """
    folder = Path(os.path.realpath(folder))  # through a link: its folder was moved aside, not the link
    if folder.exists():
        return
    previous = sorted(folder.parent.glob(f".{folder.name}.old-*"), key=lambda p: p.stat().st_mtime)
    if previous:
        os.replace(previous[-1], folder)
        log.warning("restored %s from an interrupted write", folder)
