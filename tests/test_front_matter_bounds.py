"""Front matter bounds: a block too large, or one whose YAML aliases expand it past the bound (an alias bomb),
is refused naming the file, cheaply, and the ingest skips its page and goes on."""

from __future__ import annotations

import itertools
import logging
import time
import tracemalloc

import pytest
from conftest import SMALL_BOOK, clean_env, run_script, write_book

from retrievers.indexer import read_book
from retrievers.markdown import FRONT_MATTER_MAX_CHARS, BookFileError, parse_page, toc_titles

BOMB_PAGE = "02-sim/02-bomb.md"


def alias_bomb(levels: int = 6) -> str:
    """The billion-laughs shape: each level an anchored list of nine aliases of the level below. Six levels read
    as 9**6 = 531,441 strings (a 3.7 MB title), written in 247 bytes; each more level is nine times that."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghijklmnop"
    for below, name in itertools.pairwise(names[:levels]):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{below}"] * 9) + "]")
    return "\n".join(lines) + f"\ntitle: *{names[levels - 1]}\n"


def page_with_front_matter(front: str) -> str:
    return f"---\n{front}---\n\n# Bomb\n\nThe page under the front matter.\n"


def test_an_alias_bomb_is_refused_naming_the_file_in_little_time_and_memory(tmp_path):
    (tmp_path / "bomb.md").write_text(page_with_front_matter(alias_bomb()))
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(BookFileError) as refused:
            parse_page(tmp_path / "bomb.md", tmp_path)
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.source == "bomb.md"
    assert "YAML aliases" in refused.value.reason and "alias bomb" in refused.value.reason
    assert seconds < 1.0
    assert peak < 2_000_000  # bytes; main built the 3.7 MB title (7 levels: 47 MB in 14 s)


def test_front_matter_larger_than_the_cap_is_refused_naming_the_file(tmp_path):
    tags = "".join(f"  - tag-number-{i}\n" for i in range(FRONT_MATTER_MAX_CHARS // 16))
    (tmp_path / "huge.md").write_text(page_with_front_matter(f"title: Huge\ntags:\n{tags}"))
    with pytest.raises(BookFileError, match=r"huge\.md: front matter of [\d,]+ characters, over the 65,536"):
        parse_page(tmp_path / "huge.md", tmp_path)


def test_front_matter_nested_deeper_than_python_recurses_is_refused_naming_the_file(tmp_path):
    (tmp_path / "deep.md").write_text(page_with_front_matter("a: " + "[" * 20_000 + "]" * 20_000 + "\n"))
    with pytest.raises(BookFileError, match=r"deep\.md: front matter nests deeper than Python can read"):
        parse_page(tmp_path / "deep.md", tmp_path)  # main: an unexpected RecursionError, the ingest's exit 70


def test_front_matter_with_a_few_aliases_still_reads(tmp_path):
    (tmp_path / "ok.md").write_text(page_with_front_matter("tags: &shared [ros, nodes]\nkeywords: *shared\n"
                                                           "title: Shared Tags\n"))
    assert parse_page(tmp_path / "ok.md", tmp_path).title == "Shared Tags"


def test_the_ingest_skips_the_bomb_page_with_its_reason_and_indexes_the_rest(settings, tmp_path):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    (book / BOMB_PAGE).write_text(page_with_front_matter(alias_bomb()))
    chunks, errors, n_files = read_book(book, settings)
    assert n_files == 5
    assert [(e.source, "alias bomb" in e.reason) for e in errors] == [(BOMB_PAGE, True)]
    assert {c.source for c in chunks} == set(SMALL_BOOK)


def test_the_ingest_cli_prints_which_page_it_skipped_and_why(tmp_path):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    (book / BOMB_PAGE).write_text(page_with_front_matter(alias_bomb()))
    result = run_script("ingest.py", book, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")),
                        timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"skipped {BOMB_PAGE}: front matter expands past 65,536 characters through its YAML aliases" in result.stderr
    assert "1 file(s) skipped with errors" in result.stdout


def test_an_alias_bomb_in_mkdocs_yml_is_ignored_with_a_warning(tmp_path, caplog):
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(alias_bomb(7).replace("title:", "nav:"))
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        assert toc_titles(tmp_path / "docs") == {}
    assert time.perf_counter() - started < 1.0
    assert "ignored" in caplog.text and "mkdocs.yml" in caplog.text
