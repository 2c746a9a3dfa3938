"""Ask the book (one question, a chat, or --validate): `python ask.py --help`. The command is programs/cli/ask.py."""

from bookrag.cli import run
from programs.cli.ask import main

if __name__ == "__main__":
    run(main)
