"""`Chat`: one conversation with a program — the history of answered turns, passed to every `ask()`.

    chat = Chat(program)
    chat.ask("What is a node?")
    chat.ask("How do they talk to each other?")   # rewritten to stand alone using the first turn
    chat.reset()

History policy: only answered turns are remembered. A refusal carries no book content to resolve a follow-up
against, and its question is off the book by definition; remembering it would pull the next turn's rewritten
query (and so retrieval) toward the off-topic words. After "What is the capital of France?" (refused), "and
what is a node?" is read against the last answered turn, not against France. Errors add nothing either.

The history is bounded (`max_turns`, oldest dropped first) so a long session cannot grow the prompt without end.
A `Chat` is one conversation: share the program between threads, not the `Chat`.
"""

from __future__ import annotations

from programs.rag.response import Response

DEFAULT_MAX_TURNS = 6


class Chat:
    def __init__(self, program, max_turns: int = DEFAULT_MAX_TURNS):
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.program = program
        self.max_turns = max_turns
        self.history: list[dict[str, str]] = []

    def ask(self, question: str, **kwargs) -> Response:
        """`program.ask(question, history=..., **kwargs)`; an answered turn is appended to the history."""
        if "history" in kwargs:
            raise TypeError("Chat.ask keeps the history itself; use program.ask(...) to pass one explicitly")
        response = self.program.ask(question, history=list(self.history), **kwargs)
        if not response.is_refusal:
            # The (possibly truncated) query the program answered, not the raw input.
            self.history.append({"question": response.query, "answer": response.answer})
            del self.history[: -self.max_turns]
        return response

    def reset(self) -> None:
        self.history.clear()

    def __len__(self) -> int:
        return len(self.history)
