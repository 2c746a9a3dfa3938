"""`python optimize.py`: compile the program. Its command, usage and exit codes: programs/cli/optimize.py."""

from programs.cli.optimize import command

if __name__ == "__main__":
    command()
