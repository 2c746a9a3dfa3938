"""Index a Markdown book into Qdrant: `python ingest.py BOOK_DIR [--recreate]`.

Exit codes: 0 ok, 2 configuration error, 3 store/embedding error, 4 bad arguments.
"""

from __future__ import annotations

import sys

from bookrag.cli import ArgumentParser, load_settings, run, setup_logging, user_path
from bookrag.errors import ExitCode
from bookrag.terminal_text import printable


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Index a Markdown book (a Docusaurus docs/ folder) into Qdrant.")
    parser.add_argument("book_dir", type=user_path, nargs="?", help="folder of .md/.mdx files (default: BOOKRAG_BOOK)")
    parser.add_argument("--recreate", action="store_true", help="drop the collection and index from scratch")
    parser.add_argument("--base-url", help="URL prefix for citations (default: BOOKRAG_BASE_URL or /docs)")
    parser.add_argument("--chunk-tokens", type=int, help="chunk size in tokens (default 250)")
    parser.add_argument("--chunk-overlap", type=int, help="overlap between chunks in tokens (default 40)")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging on stderr")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)

    from retrievers import BookIndex

    settings = load_settings(base_url=args.base_url, chunk_tokens=args.chunk_tokens, chunk_overlap=args.chunk_overlap)
    book_dir = args.book_dir or settings.book_dir
    with BookIndex(settings, book_dir) as index:
        report = index.ingest(recreate=args.recreate)
        for line in report.skipped_lines():
            print(printable(line), file=sys.stderr)  # the file's name and the reason may quote the book
        print(f"{index.collection}: {report.summary()}")
    return ExitCode.OK


def command() -> None:
    """`bookrag-ingest` (installed) and `python ingest.py`: main() under the CLI's one error handler."""
    run(main)
