"""Train the shipped reader: `python train_reader.py --help`. The command is programs/cli/train_reader.py."""

from bookrag.cli import run
from programs.cli.train_reader import main

if __name__ == "__main__":
    run(main)
