"""The program: the `BookRAG` module, its signatures, and what it answers with (retrieve -> gate -> answer)."""
