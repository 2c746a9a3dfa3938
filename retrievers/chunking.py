"""Split a page's sections into token-bounded, overlapping chunks with stable ids.

A chunk is built from whole blocks (paragraphs, tables, fenced code). A block larger than the budget is split
at its own seams: code at line boundaries (each piece re-fenced), tables at rows (header repeated), prose at
sentences. So no chunk ever holds half a fence. Overlap repeats the previous chunk's closing prose sentences.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass

from retrievers.markdown import Page, _fence_state

HEADING_SEPARATOR = " › "
_TOKEN = re.compile(r"\w+|[^\w\s]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(\[])")
_ID_NAMESPACE = uuid.UUID("8f1c6a52-3b8e-5d7a-9a57-6f1b0c7e2d41")


def count_tokens(text: str) -> int:
    """Words and punctuation marks: close to a WordPiece count for English prose, cheap, deterministic."""
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Chunk:
    id: str
    source: str
    module: str
    title: str
    heading: str
    url: str
    position: int
    text: str

    @property
    def embedding_text(self) -> str:
        """What the embedders and BM25 see: the heading path gives a passage its topic."""
        return f"{self.heading}\n\n{self.text}"

    def payload(self) -> dict:
        return asdict(self)


def chunk_id(source: str, heading: str, text: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"{source}\x1f{heading}\x1f{text}"))


def chunk_page(page: Page, max_tokens: int = 250, overlap: int = 40) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in page.sections:
        heading = HEADING_SEPARATOR.join(section.heading_path)
        url = f"{page.url}#{section.anchor}" if section.anchor else page.url
        for text in pack_blocks(split_blocks(section.text), max_tokens, overlap):
            chunks.append(
                Chunk(
                    id=chunk_id(page.source, heading, text),
                    source=page.source,
                    module=page.module,
                    title=page.title,
                    heading=heading,
                    url=url,
                    position=len(chunks),
                    text=text,
                )
            )
    return _unique(chunks)


def split_blocks(text: str) -> list[tuple[str, str]]:
    """(kind, text) blocks: kind is `code`, `table` or `prose`."""
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    kind = "prose"
    fence = None

    def flush(new_kind: str = "prose"):
        nonlocal kind
        body = "\n".join(current).strip("\n")
        if body.strip():
            blocks.append((kind, body))
        current.clear()
        kind = new_kind

    for line in text.split("\n"):
        was_open = fence is not None
        fence, in_code = _fence_state(line, fence)
        if in_code:
            if not was_open:  # an opening fence starts a block of its own
                flush("code")
            current.append(line)
            if fence is None:  # the closing fence ends it
                flush()
            continue
        is_table_row = line.lstrip().startswith("|")
        if kind == "code":  # unclosed fence at the end of a section
            flush()
        if is_table_row and kind != "table":
            flush("table")
        elif not is_table_row and kind == "table":
            flush()
        if not line.strip() and kind == "prose":
            flush()
        else:
            current.append(line)
    flush()
    return blocks


def pack_blocks(blocks: list[tuple[str, str]], max_tokens: int, overlap: int) -> list[str]:
    pieces = [(kind, piece) for kind, text in blocks for piece in _fit(kind, text, max_tokens, overlap)]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    last_prose = ""
    for kind, piece in pieces:
        tokens = count_tokens(piece)
        if current and size + tokens > max_tokens:
            chunks.append("\n\n".join(current))
            tail = _tail(last_prose, min(overlap, max_tokens - tokens))
            current, size = ([tail], count_tokens(tail)) if tail else ([], 0)
        current.append(piece)
        size += tokens
        last_prose = piece if kind == "prose" else ""
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def _fit(kind: str, text: str, max_tokens: int, overlap: int = 0) -> list[str]:
    """Split one block that exceeds the budget at its own seams (prose pieces leave room for the overlap)."""
    if count_tokens(text) <= max_tokens:
        return [text]
    lines = text.split("\n")
    if kind == "code":
        opener, mark = lines[0], re.match(r"\s*(`{3,}|~{3,})", lines[0]).group(1)
        closed = len(lines) > 1 and _fence_state(lines[-1], mark)[0] is None
        inner = lines[1:-1] if closed else lines[1:]
        budget = max(1, max_tokens - 2 * count_tokens(opener))
        return [f"{opener}\n{body}\n{mark}" for body in _group(inner, budget, "\n")]
    if kind == "table":
        header = lines[:2]
        budget = max(1, max_tokens - count_tokens("\n".join(header)))
        return ["\n".join(header + [body]) for body in _group(lines[2:], budget, "\n")]
    budget = max(1, max_tokens - overlap)
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        too_long = count_tokens(sentence) > budget
        sentences.extend(_group(sentence.split(" "), budget, " ") if too_long else [sentence])
    return _group(sentences, budget, " ")


def _group(items: list[str], budget: int, joiner: str) -> list[str]:
    groups: list[list[str]] = [[]]
    size = 0
    for item in items:
        tokens = count_tokens(item)
        if groups[-1] and size + tokens > budget:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += tokens
    return [joiner.join(g) for g in groups if g]


def _tail(prose: str, overlap: int) -> str:
    """The last whole sentences of a prose block that fit in `overlap` tokens."""
    if overlap <= 0 or not prose:
        return ""
    tail: list[str] = []
    for sentence in reversed(_SENTENCE_END.split(prose)):
        if count_tokens(sentence) + sum(map(count_tokens, tail)) > overlap:
            break
        tail.insert(0, sentence)
    return " ".join(tail)


def _unique(chunks: list[Chunk]) -> list[Chunk]:
    """A page that repeats a section verbatim would give two chunks one id; keep the first."""
    seen: set[str] = set()
    return [c for c in chunks if not (c.id in seen or seen.add(c.id))]
