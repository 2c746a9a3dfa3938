"""Text helpers the program's modules share: a question's content words, and the scored sentences of passages."""
