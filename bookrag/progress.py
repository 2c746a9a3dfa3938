"""Progress bars for long work: rich on a terminal, silent when output is piped or in CI."""

from __future__ import annotations

import sys
from contextlib import contextmanager


class _Silent:
    def advance(self, n: int = 1) -> None:
        pass


class _Bar:
    def __init__(self, progress, task):
        self._progress, self._task = progress, task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)


@contextmanager
def progress_bar(description: str, total: int | None, enabled: bool | None = None):
    """Yields an object with `advance(n)`. Enabled by default only when stderr is a TTY."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled or not total:
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        yield _Bar(progress, progress.add_task(description, total=total))
