"""`python ingest.py`: index a book. The command, its usage and exit codes: programs/cli/ingest.py."""

from programs.cli.ingest import command

if __name__ == "__main__":
    command()
