"""`python ask.py`: ask the book. The command, its usage and exit codes: programs/cli/ask.py."""

from programs.cli.ask import command

if __name__ == "__main__":
    command()
