"""The commands (ask, evaluate, optimize, ingest, train_reader), each a `main(argv)`: the top floor.

The scripts at the repository root (`python ask.py`) are thin entry points into these modules.
"""
