"""The guard in front of every `--out` folder: bookrag replaces only what it wrote itself.

A CLI claims its output folder before any work (ingest, LM calls), so a folder it may not use costs seconds, not a
whole run: a new or empty folder, or one holding an output of ours (its marker file is JSON with our keys), is
fine; a regular file, a folder of someone else's files, the book, the data folder, the project, the current
folder or anything holding one of them is refused, and so is a place that cannot be written.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bookrag.config import PROJECT_ROOT, Settings, nearest_existing
from bookrag.errors import BadArgumentError


@dataclass(frozen=True)
class OutputKind:
    """What a CLI writes into its folder, and how to recognise a folder it wrote before."""

    name: str  # "compiled program", "evaluation report"
    marker: str  # the file every output of this kind holds
    keys: tuple[str, ...]  # top-level keys the marker's JSON object always has

    def written_by_us(self, folder: Path) -> bool:
        try:
            document = json.loads((folder / self.marker).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False
        return isinstance(document, dict) and all(key in document for key in self.keys)


class OutputFolder:
    """`--out` checked for `kind`: `claim(settings)` refuses (exit 4, naming the folder) before any work. `named`:
    how the message names where the folder came from (the flag, or the default the settings give)."""

    def __init__(self, path: Path, kind: OutputKind, named: str = "--out"):
        self.path, self.kind, self.named = Path(path), kind, named

    def claim(self, settings: Settings) -> Path:
        """The folder to write, after every check; raises BadArgumentError."""
        self._refuse_if_it_holds_what_bookrag_needs(settings)
        self.check_replaceable()
        self._refuse_if_unwritable()
        return self.path

    def check_replaceable(self) -> None:
        """A new or empty folder, or one holding our output; never a file or someone else's folder."""
        path = self.path
        if not path.exists() and not path.is_symlink():
            return
        if not path.is_dir():
            raise self._refused("is a file, not a folder: name a new folder, or one bookrag wrote")
        try:
            empty = next(path.iterdir(), None) is None
        except OSError as exc:
            raise self._refused(f"cannot be read ({exc.strerror})") from None
        if not empty and not self.kind.written_by_us(path):
            raise self._refused(
                f"holds files that are not a bookrag {self.kind.name} (no {self.kind.marker} of ours), and "
                "writing there would replace them: name a new or empty folder")

    def _refuse_if_it_holds_what_bookrag_needs(self, settings: Settings) -> None:
        resolved = self.path.resolve()
        needed = {"the book": settings.book_dir, "the data folder (BOOKRAG_DATA_DIR)": settings.data_dir,
                  "the bookrag project": PROJECT_ROOT, "the current folder": Path.cwd()}
        for what, folder in needed.items():
            if Path(folder).resolve().is_relative_to(resolved):
                role = "is" if Path(folder).resolve() == resolved else "holds"
                raise self._refused(f"{role} {what} ({folder}), which bookrag must not replace: name a new folder")

    def _refuse_if_unwritable(self) -> None:
        """A real write where the output goes: beside the folder (an artifact is swapped in by a rename) and in
        it. Permission bits say nothing for root, a read-only mount or a path under a regular file."""
        parent = nearest_existing(self.path.parent)
        if not parent.is_dir():
            raise self._refused(f"is under {parent}, which is a file, not a folder")
        for folder in (parent, self.path) if self.path.is_dir() else (parent,):
            try:
                handle, name = tempfile.mkstemp(prefix=".bookrag-probe-", dir=folder)
            except OSError as exc:
                raise self._refused(f"cannot be written ({folder}: {exc.strerror})") from None
            os.close(handle)
            os.unlink(name)

    def _refused(self, problem: str) -> BadArgumentError:
        return BadArgumentError(f"{self.named} {self.path} {problem}")
