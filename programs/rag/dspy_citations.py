"""A `Response`'s sources as DSPy's types, for a DSPy module that reads them: its passages as
`dspy.experimental.Document`s, and its citations' cited texts as `dspy.experimental.Citations` (the shape DSPy gives
Anthropic's citations), each pointing into its document by index and character offsets.

    documents, citations = as_documents(response), as_citations(response)
    citation = citations[0]
    documents[citation.document_index].data[citation.start_char_index:citation.end_char_index] == citation.cited_text
"""

from __future__ import annotations

from dspy.experimental import Citations, Document

from programs.rag.response import Response


def as_documents(response: Response) -> list[Document]:
    """Every passage the answer was read from, in `response.passages` order; titled by its heading."""
    return [Document(data=p["text"], title=p["heading"] or p["title"] or None) for p in response.passages]


def as_citations(response: Response) -> Citations:
    """The citations with cited text (one whose passage holds nothing the answer says has none, and is left out),
    `document_index` into `as_documents(response)`, each supporting the whole answer."""
    index = {p["chunk_id"]: at for at, p in enumerate(response.passages)}
    return Citations(citations=[
        Citations.Citation(cited_text=c.cited_text, document_index=index[c.chunk_id],
                           document_title=c.heading or c.title or None, start_char_index=c.start_char_index,
                           end_char_index=c.end_char_index, supported_text=response.answer)
        for c in response.citations if c.cited_text is not None])
