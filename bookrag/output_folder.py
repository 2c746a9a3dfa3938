"""The guard in front of every `--out` folder: bookrag replaces only what it wrote itself.

A CLI claims its output folder before any work (ingest, LM calls), so a folder it may not use costs seconds, not a
whole run: a new or empty folder, or one holding an output of ours (its marker file is JSON with our keys), is
fine; a regular file, a folder of someone else's files, the book, the data folder, the project, the current
folder or anything holding one of them is refused, and so is a folder inside the book (any book the run reads)
and a place that cannot be written. An output swapped in as a whole folder (an artifact) also refuses a folder
holding anything besides its own files, which the swap would delete, and is held by one run at a time: a second
run (another data folder, another terminal) claiming it is refused until the first one ends. A symbolic link is
followed: the output goes to the folder it names.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bookrag.atomic_file import replace_folder
from bookrag.config import PROJECT_ROOT, Settings, nearest_existing
from bookrag.errors import BadArgumentError
from bookrag.json_document import read_json_file

# Whole-folder outputs this process holds (target -> open lock file), from the claim until the output is written (or
# the process ends): a later claim of the same folder in this process (the compile's artifact after optimize.py
# claimed it) is its own.
_HELD: dict[Path, int] = {}


@dataclass(frozen=True)
class OutputKind:
    """What a CLI writes into its folder, and how to recognise a folder it wrote before."""

    name: str  # "compiled program", "evaluation report"
    marker: str  # the file every output of this kind holds
    keys: tuple[str, ...]  # top-level keys the marker's JSON object always has
    # The files of an output written as a new folder that replaces the old one whole (an artifact: atomic), which
    # may therefore hold nothing else. Empty: each file is replaced on its own and other files are kept (a report).
    whole_folder: tuple[str, ...] = ()

    def written_by_us(self, folder: Path) -> bool:
        try:
            document = read_json_file(folder / self.marker)
        except (OSError, ValueError):  # missing, no regular file, too large, not UTF-8 or not JSON: not ours
            return False
        return isinstance(document, dict) and all(key in document for key in self.keys)


class OutputFolder:
    """`--out` checked for `kind`: `claim(settings)` refuses (exit 4, naming the folder) before any work. `named`:
    how the message names where the folder came from (the flag, or the default the settings give)."""

    def __init__(self, path: Path, kind: OutputKind, named: str = "--out"):
        self.path, self.kind, self.named = Path(path), kind, named

    def claim(self, settings: Settings, books: Iterable[Path] = ()) -> Path:
        """The folder to write, after every check; raises BadArgumentError. `books`: the books the run reads
        besides the configured one (train_reader's), which the folder may neither be in nor hold."""
        books = (settings.book_dir, *books)
        self._refuse_if_it_holds_what_bookrag_needs(settings, books)
        for book in books:
            self._refuse_if_inside_the_book(book)
        self.check_replaceable()
        self._refuse_if_unwritable()
        self._hold()
        return self.path

    def replace_whole(self, fill: Callable[[Path], None], data_dir: Path | None = None) -> None:
        """A whole-folder output written (`replace_folder`, recording the swap in `data_dir`; None: the one
        Settings.from_env() names), after checking the folder again: it was claimed before the work (hours, for a
        training), and files put there since would go with the swap."""
        self._hold()
        try:
            self.check_replaceable()
            replace_folder(self.target, fill, data_dir or Settings.from_env().data_dir)
        finally:
            self._release()  # written (or not): the next run may have it

    @property
    def target(self) -> Path:
        """The absolute folder written: the one a symbolic link names (the link is kept, never replaced)."""
        try:
            return self.path.resolve()
        except RuntimeError:  # Python 3.11's word for a loop of links
            raise self._refused("is a loop of symbolic links: point it at a folder, or name another") from None

    def check_replaceable(self) -> None:
        """A new or empty folder, or one holding our output (and, for a whole-folder output, nothing else); never
        a file or someone else's folder."""
        folder = self.target
        if not folder.exists():
            return
        if not folder.is_dir():
            raise self._refused("is a file, not a folder: name a new folder, or one bookrag wrote")
        try:
            names = [f"{entry.name}/" if entry.is_dir() else entry.name for entry in folder.iterdir()]
        except OSError as exc:
            raise self._refused(f"cannot be read ({exc.strerror})") from None
        if names and not self.kind.written_by_us(folder):
            raise self._refused(
                f"holds files that are not a bookrag {self.kind.name} (no {self.kind.marker} of ours), and "
                "writing there would replace them: name a new or empty folder")
        if self.kind.whole_folder and (foreign := sorted(set(names) - set(self.kind.whole_folder))):
            raise self._refused(
                f"holds files bookrag did not write ({listed(foreign)}) beside its {self.kind.name}, and a new one "
                "replaces the whole folder: move them out, or name another folder")

    def _hold(self) -> None:
        """Hold a whole-folder output for this process (an exclusive lock, in the temporary folder so that nothing
        is left beside the user's folder), or refuse it while another run holds it: two runs swapping into one
        folder would each replace the other's output, and the swap records that repair a killed swap are per data
        folder, so they cannot tell two runs with different data folders apart."""
        target = self.target
        if not self.kind.whole_folder or target in _HELD:
            return
        locks = Path(tempfile.gettempdir()) / "bookrag-output-locks"
        locks.mkdir(exist_ok=True)
        path = locks / (hashlib.sha256(os.fsencode(target)).hexdigest()[:32] + ".lock")
        handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 32, 0).decode(errors="replace").strip()
            os.close(handle)
            raise self._refused(f"is being written by another bookrag run ({holder or 'pid unknown'}): wait for it "
                                "to finish, or name another folder") from None
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"pid {os.getpid()}".encode(), 0)
        _HELD[target] = handle

    def _release(self) -> None:
        if (handle := _HELD.pop(self.target, None)) is not None:
            os.close(handle)

    def _refuse_if_it_holds_what_bookrag_needs(self, settings: Settings, books: tuple[Path, ...]) -> None:
        resolved = self.target
        needed = [*(("the book", book) for book in books), ("the data folder (BOOKRAG_DATA_DIR)", settings.data_dir),
                  ("the bookrag project", PROJECT_ROOT), ("the current folder", Path.cwd())]
        for what, folder in needed:
            if Path(folder).resolve().is_relative_to(resolved):
                role = "is" if Path(folder).resolve() == resolved else "holds"
                raise self._refused(f"{role} {what} ({folder}), which bookrag must not replace: name a new folder")

    def _refuse_if_inside_the_book(self, book: Path) -> None:
        if self.target.is_relative_to(Path(book).resolve()):
            raise self._refused(f"is inside the book ({book}): what bookrag writes there would be read as part of "
                                "the book on the next run; name a folder outside it")

    def _refuse_if_unwritable(self) -> None:
        """A real write where the output goes: beside the folder (an artifact is swapped in by a rename) and in
        it. Permission bits say nothing for root, a read-only mount or a path under a regular file."""
        folder = self.target
        parent = nearest_existing(folder.parent)
        if not parent.is_dir():
            raise self._refused(f"is under {parent}, which is a file, not a folder")
        for place in (parent, folder) if folder.is_dir() else (parent,):
            try:
                handle, name = tempfile.mkstemp(prefix=".bookrag-probe-", dir=place)
            except OSError as exc:
                raise self._refused(f"cannot be written ({place}: {exc.strerror})") from None
            os.close(handle)
            os.unlink(name)

    def _refused(self, problem: str) -> BadArgumentError:
        link = f" (a link to {os.readlink(self.path)})" if self.path.is_symlink() else ""
        return BadArgumentError(f"{self.named} {self.path}{link} {problem}")


def listed(names: list[str], most: int = 5) -> str:
    """`a, b, c` or, past `most` names, `a, b, c, d, e and 3 more`."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more
