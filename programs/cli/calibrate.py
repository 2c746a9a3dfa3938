"""Rebuild the refusal gate's shipped default calibration: `make calibration [MAX_FALSE_REFUSAL=0.05]`.

    python -m programs.cli.calibrate [--max-false-refusal SHARE] [--out FILE] [--verbose]

Fits the zero-shot program's gate on the train splits of every labeled book (programs/compile/default_gate.py:
the bundled primer, book A and the FastAPI tutorial, from ../shared/corpora) and writes
programs/refusal/default_calibration.json. Retrieval only, no LM; indexes go to BOOKRAG_DATA_DIR.
Exit codes: 0 written, 2 configuration error, 3 store/embedding error, 4 bad arguments or question file.
"""

from __future__ import annotations

from bookrag.cli import ArgumentParser, load_settings, notice, run, setup_logging, user_path
from bookrag.errors import ExitCode


def main(argv: list[str] | None = None) -> int:
    from programs.cli.refusal_flags import add_refusal_arguments, refusal_policy
    from programs.compile.default_gate import rebuild_default_calibration
    from programs.refusal.default_calibration import DEFAULT_CALIBRATION

    parser = ArgumentParser(description="Rebuild the refusal gate's default calibration from the labeled books.")
    add_refusal_arguments(parser)
    parser.add_argument("--out", type=user_path, default=DEFAULT_CALIBRATION,
                        help="the file to write (default: programs/refusal/default_calibration.json)")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging on stderr")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    settings = load_settings()
    print(f"Wrote {rebuild_default_calibration(settings.data_dir, refusal_policy(args), notice, args.out)}")
    return ExitCode.OK


if __name__ == "__main__":
    run(main)
