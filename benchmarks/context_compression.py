"""Does the compact context keep the facts? Key facts present in the LM's context: five whole passages vs the
question's best sentences at several word budgets, with the prompt tokens each costs.

    python benchmarks/context_compression.py [--splits train,dev] [--budgets 120,160,200] [--data-dir DIR]

Runs on the answerable questions (selected-text ones excepted) of the bundled book, book A and the FastAPI tutorial. A question
"keeps its facts" when every reference key fact occurs in the context (the same matching as the answer metric).
Sentences rank by shared words alone, or by shared words plus MiniLM cosine (the program's default). Budgets are
chosen on train and dev, never on test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS, PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.metrics import fact_present
from programs.rag.context import CompactContext, format_context
from retrievers import BookIndex

BOOKS = {
    "bundled": (BUNDLED_BOOK, BUNDLED_QUESTIONS),
    "book A": (PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a", PROJECT_ROOT / "datasets/physical-ai-book-a.csv"),
    "FastAPI": (PROJECT_ROOT.parent / "shared/corpora/fastapi-tutorial", PROJECT_ROOT / "datasets/fastapi-tutorial.csv"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="train,dev")
    parser.add_argument("--budgets", default="120,160,200")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    splits = set(args.splits.split(","))
    count_tokens = tokenizer()
    budgets = [int(b) for b in args.budgets.split(",")]
    print(f"{'book':8} {'context':26} {'questions':>9} {'facts kept':>10} {'all kept':>8} {'tokens p50':>10} "
          f"{'tokens p95':>10}")
    for book, (book_dir, questions_path) in BOOKS.items():
        questions = [q for q in load_questions(questions_path) if q.split in splits and q.answerable
                     and q.key_facts and not q.selected_text]
        with BookIndex(Settings(data_dir=args.data_dir, book_dir=book_dir)) as index:
            index.ingest(progress=False)
            retrieved = [(q, index.retriever.search(q.search_text, k=5)) for q in questions]
            variants = {"5 whole passages": format_context}
            for words in budgets:
                variants[f"{words} words, shared words"] = CompactContext(None, words)
                variants[f"{words} words, + embedding"] = CompactContext(index.embedder, words)
            contexts = {name: [make(q.search_text, passages) if name != "5 whole passages" else make(passages)
                               for q, passages in retrieved] for name, make in variants.items()}
        for name, texts in contexts.items():
            facts, complete, tokens = [], [], []
            for (q, _), context in zip(retrieved, texts):
                present = [fact_present(f, context) for f in q.key_facts]
                facts.extend(present)
                complete.append(all(present))
                tokens.append(count_tokens(context))
            print(f"{book:8} {name:26} {len(questions):9d} {statistics.mean(facts):10.3f} "
                  f"{statistics.mean(complete):8.3f} {statistics.median(tokens):10.0f} "
                  f"{sorted(tokens)[int(0.95 * (len(tokens) - 1))]:10.0f}")


def tokenizer():
    """The local model's own tokenizer (vocabulary only: no weights loaded)."""
    from llama_cpp import Llama

    from programs.lm.packaged_model import QWEN_CODER_1_5B

    vocab = Llama(str(QWEN_CODER_1_5B.path(PROJECT_ROOT / "data" / "models")), vocab_only=True, verbose=False)
    return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False))


if __name__ == "__main__":
    main()
