"""Programs evaluated one after another, so that what finished survives: a program that fails after another
finished (its LM down at warm-up), or SIGINT / SIGTERM half-way, still leaves report.json and predictions.csv of the
finished programs and rows, marked partial (why, and how many questions each program answered)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from bookrag.errors import BookragError, ExitCode
from programs.evaluate.plots import write_plots
from programs.evaluate.report_files import REPORT_FILE, write_predictions_csv, write_report_json
from programs.evaluate.reports import in_question_order, program_report, report_of


class Stopped(BaseException):  # not an Exception: no `except Exception` on the way may swallow it
    """SIGINT or SIGTERM during the questions: what finished is written as a partial report."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def signals_stop_the_run():
    """SIGINT and SIGTERM raise `Stopped` in the main thread while the questions are answered."""

    def stop(signum, _frame):
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class ProgramRuns:
    """Every program over the questions, one after another. A program that fails (its LM is down at warm-up) or a
    stop signal still leaves the finished programs' reports, and the rows finished so far, on disk, marked partial.
    `say` gets the line for the user on what a stop left (the caller shows it, or not)."""

    def __init__(self, programs: dict, questions: list, out_dir: Path, run_settings: dict, *,
                 say: Callable[[str], None]):
        self.programs, self.questions, self.out_dir, self.run_settings = programs, questions, out_dir, run_settings
        self.say = say
        self.reports: dict[str, dict] = {}

    def answer(self, **options) -> int | None:
        """None when every program finished; after a stop signal, the exit code (128 + the signal); a program's
        error is raised. What finished is written first either way."""
        for name, program in self.programs.items():
            finished = []
            try:
                program.warm_up()  # the LM's load and the prompt's fixed prefix are not timed as answer latency
                self.reports[name] = program_report(program, self.questions, finished=finished, **options)
            except Stopped as stop:
                if finished:
                    self.reports[name] = report_of(program, in_question_order(finished, self.questions))
                self.write(f"stopped by {stop}")
                self.say(f"{stop}: stopped; wrote the {self._finished()} finished to {self.out_dir} as a partial "
                         "report")
                return ExitCode(128 + stop.signum)  # SIGINT 130, SIGTERM 143
            except BookragError as exc:
                if not self.reports:
                    raise
                self.write(f"{name} failed: {exc}")
                raise type(exc)(f"{name} failed: {exc}; the report of {', '.join(self.reports)} is in "
                                f"{self.out_dir}") from None
        return None

    def write(self, stopped: str | None = None) -> list[Path]:
        """report.json and predictions.csv (and the plots, for a whole run); `stopped`: why the run is partial."""
        partial = stopped and {"reason": stopped, "questions": len(self.questions),
                               "answered": {name: len(self.reports[name]["rows"]) if name in self.reports else 0
                                            for name in self.programs}}
        files = [write_report_json(self.out_dir / REPORT_FILE, self.run_settings, self.reports, partial),
                 write_predictions_csv(self.out_dir / "predictions.csv", self.reports)]
        return files if stopped else [*files, *write_plots(self.reports, self.out_dir)]

    def _finished(self) -> str:
        return ", ".join(f"{len(report['rows'])} rows of {name}" for name, report in self.reports.items()) or "0 rows"
