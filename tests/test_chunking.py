"""Chunking a page: token budget, code and table splitting, overlap, stable ids, payloads."""

from __future__ import annotations

import dataclasses
import itertools
import time

from retrievers.chunking import CHARS_PER_TOKEN, Chunk, chunk_id, chunk_page, count_tokens
from retrievers.markdown import Page, Section, fence_state


def make_page(*sections: tuple[tuple[str, ...], str], source: str = "01-mod/page.md", title: str = "Page") -> Page:
    return Page(
        source=source, title=title, module="mod", url="/docs/mod/page",
        sections=tuple(Section(path, path[-1].lower().replace(" ", "-") if len(path) > 1 else "", text)
                       for path, text in sections),
    )


def prose(n_sentences: int, word: str = "topic") -> str:
    return " ".join(f"Sentence {i} explains the {word} number {i} in plain words." for i in range(n_sentences))


def code_block(n_lines: int, lang: str = "python", fence: str = "```") -> str:
    body = "\n".join(f"value_{i} = compute(alpha, beta, gamma)  # step {i}" for i in range(n_lines))
    return f"{fence}{lang}\n{body}\n{fence}"


def table(n_rows: int) -> str:
    header = "| joint | limit | note |\n|---|---|---|"
    return header + "\n" + "\n".join(f"| joint{i} | {i}.5 rad | measured on the bench |" for i in range(n_rows))


def fences_balanced(text: str) -> bool:
    fence = None
    for line in text.split("\n"):
        fence, _ = fence_state(line, fence)
    return fence is None


def test_count_tokens_counts_words_and_punctuation():
    assert count_tokens("Hello, world!") == 4
    assert count_tokens("") == 0


def test_chunks_respect_the_token_budget():
    text = "\n\n".join([prose(12), code_block(30), table(25), prose(20, "joint")])
    chunks = chunk_page(make_page((("Page", "Budget"), text)), max_tokens=80, overlap=15)
    assert len(chunks) > 5
    for chunk in chunks:
        assert count_tokens(chunk.text) <= 80, chunk.text


def test_a_single_indivisible_line_may_exceed_the_budget():
    long_line = "x" + "=1" * 60  # one code line of ~120 tokens: code splits only between lines
    text = f"Intro sentence here.\n\n```\n{long_line}\nshort = 1\n```"
    chunks = chunk_page(make_page((("Page",), text)), max_tokens=40, overlap=5)
    over = [c for c in chunks if count_tokens(c.text) > 40]
    assert len(over) == 1 and long_line in over[0].text
    assert all(fences_balanced(c.text) for c in chunks)



def test_a_20_mb_word_is_cut_so_no_chunk_exceeds_the_character_cap(caplog):
    word = "x" * 20_000_000  # one "token": the token budget alone let it through as a 20 MB chunk
    text = f"Intro sentence here.\n\nBefore {word} after the blob.\n\nClosing words."
    chunks = chunk_page(make_page((("Page",), text), source="blob/page.md"), max_tokens=250, overlap=40)
    assert max(len(c.text) for c in chunks) <= 250 * CHARS_PER_TOKEN
    assert sum(len(c.text) for c in chunks) < 3 * 250 * CHARS_PER_TOKEN  # cut, not split into 5,000 chunks
    joined = " ".join(c.text for c in chunks)
    assert "Intro sentence here." in joined and "after the blob." in joined and "Closing words." in joined
    assert "blob/page.md: a 20000000-character run without spaces was cut" in caplog.text



def test_runs_just_under_the_character_cap_chunk_in_linear_time():
    runs = " ".join(f"{i:04d}" + "y" * (250 * CHARS_PER_TOKEN - 4) for i in range(300))  # 1.2 MB, nothing to cut
    started = time.perf_counter()
    chunks = chunk_page(make_page((("Page",), runs)), max_tokens=250, overlap=40)
    assert time.perf_counter() - started < 2.0  # a search for long runs from every position took 9 s here
    assert len(chunks) == 300 and max(len(c.text) for c in chunks) <= 250 * CHARS_PER_TOKEN

def test_a_line_longer_than_the_character_cap_is_split_keeping_every_character():
    line = " ".join(f"v{i}=f({i})" for i in range(3000))  # ~27 KB, many short tokens, one line
    block = f"```python\n{line}\nshort = 1\n```"
    chunks = chunk_page(make_page((("Page", "Code"), block)), max_tokens=60, overlap=10)
    assert max(len(c.text) for c in chunks) <= 60 * CHARS_PER_TOKEN
    assert all(fences_balanced(c.text) and c.text.startswith("```python\n") for c in chunks)
    code_lines = [line for c in chunks for line in c.text.split("\n")[1:-1]]
    assert "".join(code_lines[:-1]) == line and code_lines[-1] == "short = 1"


def test_long_table_rows_and_long_words_in_prose_stay_under_the_character_cap():
    row = "| " + " ".join(f"cell{i}" for i in range(2000)) + " |"
    words = " ".join(f"{'ab' * 150}{i}" for i in range(200))  # 300-character words: few tokens, many characters
    text = f"| a |\n|---|\n{row}\n| b |\n\n{words}"
    chunks = chunk_page(make_page((("Page",), text)), max_tokens=40, overlap=5)
    assert max(len(c.text) for c in chunks) <= 40 * CHARS_PER_TOKEN
    assert all(f"{'ab' * 150}{i}" in " ".join(c.text for c in chunks) for i in range(200))

def test_long_code_block_splits_into_fenced_pieces_keeping_the_language_tag():
    block = code_block(60, lang="python")
    chunks = chunk_page(make_page((("Page", "Code"), block)), max_tokens=60, overlap=10)
    assert len(chunks) >= 4
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[0] == "```python"
        assert lines[-1] == "```"
        assert fences_balanced(chunk.text)
        assert count_tokens(chunk.text) <= 60
    code_lines = [line for c in chunks for line in c.text.split("\n")[1:-1]]
    assert code_lines == block.split("\n")[1:-1]  # every line once, in order, nothing lost


def test_long_tilde_fence_with_nested_backticks_stays_balanced():
    inner = "\n".join(["```yaml", *[f"key_{i}: value {i}" for i in range(40)], "```"])
    block = f"~~~~markdown\n{inner}\n~~~~"
    chunks = chunk_page(make_page((("Page",), block)), max_tokens=40, overlap=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("~~~~markdown\n") and chunk.text.endswith("\n~~~~")
        assert fences_balanced(chunk.text)


def test_long_table_splits_at_rows_with_the_header_repeated():
    tbl = table(40)
    header = "| joint | limit | note |\n|---|---|---|"
    chunks = chunk_page(make_page((("Page", "Limits"), tbl)), max_tokens=70, overlap=10)
    assert len(chunks) >= 3
    rows = []
    for chunk in chunks:
        assert chunk.text.startswith(header + "\n")
        assert count_tokens(chunk.text) <= 70
        rows += chunk.text.split("\n")[2:]
    assert rows == tbl.split("\n")[2:]


def test_overlap_repeats_the_previous_chunks_last_sentence():
    paragraphs = [
        "Alpha one starts here. Alpha two keeps going. The final alpha sentence closes it.",
        "Bravo one starts here. Bravo two keeps going. The final bravo sentence closes it.",
        "Charlie one starts here. Charlie two keeps going. The final charlie sentence closes it.",
    ]
    chunks = chunk_page(make_page((("Page",), "\n\n".join(paragraphs))), max_tokens=30, overlap=8)
    assert len(chunks) == 3
    assert chunks[1].text.startswith("The final alpha sentence closes it.\n\nBravo one")
    assert chunks[2].text.startswith("The final bravo sentence closes it.\n\nCharlie one")


def test_overlap_continues_inside_a_paragraph_longer_than_the_budget():
    paragraph = prose(30)
    chunks = chunk_page(make_page((("Page",), paragraph)), max_tokens=60, overlap=12)
    assert len(chunks) >= 4
    for before, after in itertools.pairwise(chunks):
        last_sentence = before.text.rsplit(". ", 1)[-1]
        assert after.text.startswith(last_sentence), (before.text, after.text)
        assert count_tokens(after.text) <= 60


def test_no_overlap_when_overlap_is_zero():
    paragraphs = ["First paragraph sentence one. First paragraph sentence two.",
                  "Second paragraph sentence one. Second paragraph sentence two."]
    chunks = chunk_page(make_page((("Page",), "\n\n".join(paragraphs))), max_tokens=12, overlap=0)
    assert [c.text for c in chunks] == paragraphs


def test_chunk_ids_are_stable_across_runs():
    page = make_page((("Page", "A"), prose(20)), (("Page", "B"), code_block(20)))
    first = [c.id for c in chunk_page(page, 50, 10)]
    second = [c.id for c in chunk_page(page, 50, 10)]
    assert first == second
    assert chunk_id("a.md", "H", "text") == chunk_id("a.md", "H", "text")


def test_chunk_id_changes_with_text_heading_or_source():
    base = chunk_id("a.md", "Page › H", "Some text.")
    assert len({base, chunk_id("a.md", "Page › H", "Some text!"), chunk_id("a.md", "Page › H2", "Some text."),
                chunk_id("b.md", "Page › H", "Some text.")}) == 4


def test_chunk_id_ignores_title_url_and_module():
    page = make_page((("Page", "A"), "Same text."))
    renamed = dataclasses.replace(page, title="New title", url="/docs/elsewhere", module="other")
    assert [c.id for c in chunk_page(page)] == [c.id for c in chunk_page(renamed)]


def test_chunk_carries_every_payload_field():
    page = make_page((("Page", "Section Two"), "Body text of the section."))
    (chunk,) = chunk_page(page)
    payload = chunk.payload()
    assert set(payload) == {f.name for f in dataclasses.fields(Chunk)}
    assert payload == {
        "id": chunk.id, "source": "01-mod/page.md", "module": "mod", "title": "Page",
        "heading": "Page › Section Two", "url": "/docs/mod/page#section-two", "position": 0,
        "text": "Body text of the section.",
    }
    assert chunk.embedding_text == "Page › Section Two\n\nBody text of the section."


def test_positions_count_up_through_the_page():
    page = make_page((("Page", "A"), prose(10)), (("Page", "B"), prose(10, "joint")))
    chunks = chunk_page(page, 40, 5)
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_repeated_sections_do_not_give_duplicate_ids():
    same = (("Page", "Repeated"), "Exactly the same words.")
    chunks = chunk_page(make_page(same, (("Page", "Other"), "Other words."), same))
    ids = [c.id for c in chunks]
    assert len(ids) == len(set(ids)) == 2


def test_a_whole_real_page_gives_unique_ids_and_balanced_fences():
    from pathlib import Path

    from retrievers.markdown import parse_page

    book = Path(__file__).resolve().parents[1] / "datasets" / "humanoid-primer"
    path = book / "01-ros2" / "03-rclpy-and-launch.mdx"
    chunks = chunk_page(parse_page(path, book), max_tokens=120, overlap=20)
    assert len(chunks) > 5
    assert len({c.id for c in chunks}) == len(chunks)
    assert all(fences_balanced(c.text) for c in chunks)


def test_chunk_url_anchor_is_the_explicit_heading_id_once(tmp_path):
    from retrievers.markdown import parse_page

    (tmp_path / "path-params.md").write_text(
        "# Path Parameters { #path-parameters }\n\nIntro.\n\n## Data validation { #data-validation }\n\nChecked.\n"
    )
    chunks = chunk_page(parse_page(tmp_path / "path-params.md", tmp_path))
    assert [(c.title, c.heading, c.url) for c in chunks] == [
        ("Path Parameters", "Path Parameters", "/docs/path-params"),
        ("Path Parameters", "Path Parameters › Data validation", "/docs/path-params#data-validation"),
    ]
