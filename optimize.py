"""Compile the program against a labeled question set: `python optimize.py --help`. The command is programs/cli/optimize.py."""

from bookrag.cli import run
from programs.cli.optimize import main

if __name__ == "__main__":
    run(main)
