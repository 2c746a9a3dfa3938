"""Accuracy reports of a program over labeled questions: `python evaluate.py --help`. The command is programs/cli/evaluate.py."""

from bookrag.cli import run
from programs.cli.evaluate import main

if __name__ == "__main__":
    run(main)
