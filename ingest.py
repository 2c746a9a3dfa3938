"""Index a Markdown book: `python ingest.py --help`. The command is programs/cli/ingest.py."""

from bookrag.cli import run
from programs.cli.ingest import main

if __name__ == "__main__":
    run(main)
