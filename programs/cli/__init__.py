"""The commands: ask, evaluate, optimize, ingest and train_reader, each a `main(argv) -> exit code`; the top floor.

The scripts at the repository root (`python ask.py`) are thin entry points into these modules.
"""
