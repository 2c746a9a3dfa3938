"""The query-rewriting signature for multi-turn chat."""

import dspy


class RewriteQuery(dspy.Signature):
    """Rewrite the follow-up question as one standalone search query for the book, replacing pronouns and
    vague references with what they refer to in the conversation. Keep the book's terms; add nothing else."""

    history: str = dspy.InputField(desc="earlier turns of this conversation")
    question: str = dspy.InputField(desc="the follow-up question")
    standalone_query: str = dspy.OutputField()
