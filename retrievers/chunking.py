"""Split a page's sections into token-bounded, overlapping chunks with stable ids.

A chunk is built from whole blocks (paragraphs, tables, fenced code). A block larger than the budget is split
at its own seams: code at line boundaries (each piece re-fenced), tables at rows (header repeated), prose at
sentences. So no chunk ever holds half a fence. Overlap repeats the previous chunk's closing prose sentences.
A chunk is bounded in characters too (`CHARS_PER_TOKEN`): a run of text without spaces counts as one token, so
a run longer than a whole chunk is cut, and a line longer than a chunk is split at the character bound.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import asdict, dataclass

from retrievers.markdown import Page, fence_state

log = logging.getLogger(__name__)
HEADING_SEPARATOR = " › "
# A chunk holds at most this many characters per token of its budget (4,000 at the default 250 tokens, about
# 1,000 tokens of a hosted LM's prompt). Real chunks run 4 to 8 characters per token: the densest of the four
# books measured (physical-ai-book-a) is 1,901 characters at 250 tokens, 7.6 a token. Twice that changes no
# real chunk; what it stops is text the token count does not see: a 20 MB run without a space is one "token".
CHARS_PER_TOKEN = 16
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
    """Chunks of at most `max_tokens` tokens and `max_tokens * CHARS_PER_TOKEN` characters (one code line
    longer in tokens stays whole; see `_fit`)."""
    max_chars = max_tokens * CHARS_PER_TOKEN
    chunks: list[Chunk] = []
    for section in page.sections:
        heading = HEADING_SEPARATOR.join(section.heading_path)
        url = f"{page.url}#{section.anchor}" if section.anchor else page.url
        blocks = split_blocks(_cut_long_runs(section.text, max_chars, page.source))
        for text in pack_blocks(blocks, max_tokens, overlap, max_chars):
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


def _cut_long_runs(text: str, max_chars: int, source: str) -> str:
    """A run without whitespace longer than a chunk (an inlined image, a minified bundle, a blob) keeps its first
    `max_chars` characters: split, it would fill the index with thousands of chunks nobody reads."""
    def cut(run: re.Match) -> str:
        log.warning("%s: a %d-character run without spaces was cut to its first %d characters",
                    source, len(run.group()), max_chars)
        return run.group()[:max_chars]

    return re.sub(rf"(?<!\S)\S{{{max_chars + 1},}}", cut, text)  # anchored at a run's start: linear, not quadratic


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
        fence, in_code = fence_state(line, fence)
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


def pack_blocks(blocks: list[tuple[str, str]], max_tokens: int, overlap: int, max_chars: int) -> list[str]:
    pieces = [(kind, piece) for kind, text in blocks for piece in _fit(kind, text, max_tokens, max_chars, overlap)]
    chunks: list[str] = []
    current: list[str] = []
    size = chars = 0  # chars: the length of current joined, plus the separator that would follow it
    last_prose = ""
    for kind, piece in pieces:
        tokens = count_tokens(piece)
        if current and (size + tokens > max_tokens or chars + len(piece) > max_chars):
            chunks.append("\n\n".join(current))
            tail = _tail(last_prose, min(overlap, max_tokens - tokens), max_chars - len(piece) - 2)
            current, size, chars = ([tail], count_tokens(tail), len(tail) + 2) if tail else ([], 0, 0)
        current.append(piece)
        size += tokens
        chars += len(piece) + 2
        last_prose = piece if kind == "prose" else ""
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def _fit(kind: str, text: str, max_tokens: int, max_chars: int, overlap: int = 0) -> list[str]:
    """Split one block that exceeds the budget at its own seams (prose pieces leave room for the overlap). A piece
    still longer than `max_chars` (a fence or table header line longer than a chunk) is cut at the bound."""
    if count_tokens(text) <= max_tokens and len(text) <= max_chars:
        return [text]
    return _sliced(_split_at_seams(kind, text, max_tokens, max_chars, overlap), max_chars)


def _split_at_seams(kind: str, text: str, max_tokens: int, max_chars: int, overlap: int) -> list[str]:
    lines = text.split("\n")
    if kind == "code":
        opener, mark = lines[0], re.match(r"\s*(`{3,}|~{3,})", lines[0]).group(1)
        closed = len(lines) > 1 and fence_state(lines[-1], mark)[0] is None
        inner = lines[1:-1] if closed else lines[1:]
        budget = max(1, max_tokens - 2 * count_tokens(opener))
        room = max(1, max_chars - len(opener) - len(mark) - 2)
        return [f"{opener}\n{body}\n{mark}" for body in _group(_sliced(inner, room), budget, room, "\n")]
    if kind == "table":
        header = "\n".join(lines[:2])
        budget = max(1, max_tokens - count_tokens(header))
        room = max(1, max_chars - len(header) - 1)
        return [f"{header}\n{body}" for body in _group(_sliced(lines[2:], room), budget, room, "\n")]
    budget = max(1, max_tokens - overlap)
    room = max(1, max_chars - overlap * CHARS_PER_TOKEN)
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        too_long = count_tokens(sentence) > budget or len(sentence) > room
        sentences.extend(_group(sentence.split(" "), budget, room, " ") if too_long else [sentence])
    return _group(sentences, budget, room, " ")


def _sliced(items: list[str], room: int) -> list[str]:
    """Each item longer than `room` characters cut into pieces of `room`."""
    return [item[i : i + room] for item in items for i in range(0, max(len(item), 1), room)]


def _group(items: list[str], budget: int, room: int, joiner: str) -> list[str]:
    """Items joined into groups of at most `budget` tokens and `room` characters (an item over either stands
    alone)."""
    groups: list[list[str]] = [[]]
    size = chars = 0
    for item in items:
        tokens = count_tokens(item)
        if groups[-1] and (size + tokens > budget or chars + len(item) > room):
            groups.append([])
            size = chars = 0
        groups[-1].append(item)
        size += tokens
        chars += len(item) + len(joiner)
    return [joiner.join(g) for g in groups if g]


def _tail(prose: str, overlap: int, room: int) -> str:
    """The last whole sentences of a prose block that fit in `overlap` tokens and `room` characters."""
    if overlap <= 0 or room <= 0 or not prose:
        return ""
    tail = ""
    for sentence in reversed(_SENTENCE_END.split(prose)):
        longer = f"{sentence} {tail}" if tail else sentence
        if count_tokens(longer) > overlap or len(longer) > room:
            break
        tail = longer
    return tail


def _unique(chunks: list[Chunk]) -> list[Chunk]:
    """A page that repeats a section verbatim would give two chunks one id; keep the first."""
    seen: set[str] = set()
    return [c for c in chunks if not (c.id in seen or seen.add(c.id))]
