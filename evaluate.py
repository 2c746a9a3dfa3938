"""`python evaluate.py`: accuracy reports. The command, its usage and exit codes: programs/cli/evaluate.py."""

from programs.cli.evaluate import command

if __name__ == "__main__":
    command()
