"""`python train_reader.py`: train the reader. The command and its usage: programs/cli/train_reader.py."""

from programs.cli.train_reader import command

if __name__ == "__main__":
    command()
