"""Cited text: the words of each cited passage that support the answer, with their offsets in the passage text, in
every answer mode, in the terminal, as DSPy's Citations, and in evaluate's figures."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import dspy
import pytest
from dspy.experimental import Citations, Document
from dspy.utils import DummyLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_book import SELECTION, generated

from bookrag.questions import Question
from programs.cli import ask
from programs.evaluate import metrics
from programs.evaluate.report_files import cited_text_cell
from programs.rag.cited_text import CitedText, cited_text
from programs.rag.dspy_citations import as_citations, as_documents
from programs.rag.response import Citation, Response
from retrievers.passage import Passage

PAGE = ("Kestrel was designed for university labs.\n\n**Kestrel** is a 1.2 m tall teaching humanoid with 28 degrees "
        "of freedom. It weighs 24 kg.\n\n- The camera is a `RealSense D435i`.\n")


def page(text: str = PAGE) -> Passage:
    return Passage(id="intro#0", score=0.5, text=text, title="Primer", heading="Meet Kestrel", module="",
                   source="intro.md", url="/docs/#meet-kestrel")


def assert_in_place(cited: CitedText, text: str) -> None:
    assert text[cited.start_char_index:cited.end_char_index] == cited.cited_text


# -- the cited-text step ----------------------------------------------------------------------------------------

def test_the_cited_text_is_the_sentence_holding_the_answers_claim_at_its_offsets_with_its_markup():
    cited = cited_text("Kestrel is 1.2 m tall [1].", "How tall is Kestrel?", page())
    assert cited.cited_text == "**Kestrel** is a 1.2 m tall teaching humanoid with 28 degrees of freedom."
    assert_in_place(cited, PAGE)


def test_a_sentence_that_points_back_comes_with_the_one_before_it():
    cited = cited_text("Kestrel weighs 24 kg.", "How heavy is Kestrel?", page())
    assert cited.cited_text == ("**Kestrel** is a 1.2 m tall teaching humanoid with 28 degrees of freedom. "
                                "It weighs 24 kg.")
    assert_in_place(cited, PAGE)


def test_the_sentence_beside_it_comes_too_when_it_holds_claims_the_first_lacks():
    cited = cited_text("It is 1.2 m tall and weighs 24 kg.", "How tall and heavy is Kestrel?", page())
    assert "1.2 m" in cited.cited_text and "24 kg" in cited.cited_text
    assert_in_place(cited, PAGE)


def test_a_name_in_code_markup_is_found_and_an_answer_without_claims_is_found_by_its_words():
    cited = cited_text("Kestrel uses a RealSense D435i camera.", "Which camera does Kestrel use?", page())
    assert cited.cited_text == "The camera is a `RealSense D435i`."
    cited = cited_text("It was built for teaching in university labs.", "What was Kestrel built for?", page())
    assert cited.cited_text == "Kestrel was designed for university labs."


@pytest.mark.parametrize(("answer", "question"), [
    ("Kestrel is 1.9 m tall.", "How tall is Kestrel?"),  # the passage holds no claim of the answer
    ("Kestrel is a robot.", "What is Kestrel?"),  # only the question's own name: an echo, no support
    ("Quillon sweeps floors at night, quietly and slowly.", "What does Quillon do?"),  # another subject
])
def test_a_passage_that_holds_nothing_the_answer_says_has_no_cited_text(answer, question):
    assert cited_text(answer, question, page()) is None


# -- in every mode ------------------------------------------------------------------------------------------------

def cited_words_in_place(response: Response) -> list[str | None]:
    texts = {p["chunk_id"]: p["text"] for p in response.passages}
    for c in response.citations:
        if c.cited_text is not None:
            assert texts[c.chunk_id][c.start_char_index:c.end_char_index] == c.cited_text
    return [c.cited_text for c in response.citations]


def test_a_generated_answer_carries_the_sentence_of_its_passage(make):
    response = make(lm=DummyLM([generated()])).ask("How tall is Quillon the teaching robot?")
    assert response.mode == "generated"
    assert cited_words_in_place(response) == ["Quillon is 1.4 m tall and weighs 31 kg."]


def test_a_generated_answers_citation_of_a_passage_that_does_not_support_it_has_no_cited_text(make):
    response = make(lm=DummyLM([generated(citations=[1, 2])])).ask("How tall is Quillon the teaching robot?")
    assert not response.is_refusal and len(response.citations) == 2
    by_source = {c.source: c for c in response.citations}
    assert by_source["intro.md"].cited_text == "Quillon is 1.4 m tall and weighs 31 kg."
    (other,) = (c for c in response.citations if c.source != "intro.md")
    assert other.cited_text is other.start_char_index is other.end_char_index is None
    assert None in [c["cited_text"] for c in response.to_dict()["citations"]]  # null in --json


def test_quoted_and_extractive_answers_carry_the_sentence_they_quote(make):
    quoted = make(lm=DummyLM([{"unrelated": "x"}] * 3)).ask("How tall is Quillon the teaching robot?")
    assert quoted.mode == "quoted" and cited_words_in_place(quoted) == ["Quillon is 1.4 m tall and weighs 31 kg."]
    extractive = make(answer_mode="extractive").ask("How fast does the tarrasque solver run physics?")
    assert "The tarrasque solver runs physics at 1000 Hz." in cited_words_in_place(extractive)


@pytest.mark.parametrize("mode", ["extractive", "generated"])
def test_a_selected_text_answer_cites_its_selection_with_the_words_that_hold_it(make, mode):
    lm = DummyLM([generated(answer="It cuts motor power in under 50 ms.", citations=[1])])
    response = make(lm=lm, answer_mode=mode).ask("How fast does the wireless emergency stop cut motor power?",
                                                 selected_text=SELECTION)
    (citation,) = response.citations
    assert citation.title == "Selected text" and citation.source == ""
    assert citation.cited_text == ("The operator holds the wireless emergency stop, which cuts motor power in "
                                   "under 50 ms.")
    assert SELECTION[citation.start_char_index:citation.end_char_index] == citation.cited_text


# -- DSPy's types -------------------------------------------------------------------------------------------------

def test_a_response_converts_to_dspys_documents_and_citations(make):
    response = make(lm=DummyLM([generated(citations=[1, 2])])).ask("How tall is Quillon the teaching robot?")
    documents, citations = as_documents(response), as_citations(response)
    assert all(isinstance(d, Document) for d in documents) and isinstance(citations, Citations)
    assert [d.data for d in documents] == [p["text"] for p in response.passages]
    (citation,) = citations  # the citation without cited text is left out
    assert citation.cited_text == "Quillon is 1.4 m tall and weighs 31 kg."
    document = documents[citation.document_index]
    assert document.data[citation.start_char_index:citation.end_char_index] == citation.cited_text
    assert citation.document_title == document.title and citation.supported_text == response.answer
    assert Citations.from_dict_list(citations.format()) == citations  # DSPy reads back what it wrote


# -- the terminal -------------------------------------------------------------------------------------------------

def test_each_source_shows_its_cited_text_on_one_line_shortened_and_safe(capsys):
    words = "Kestrel is 1.2 m tall.\x1b[2J\u202e " + "and more " * 40
    citation = Citation(title="Primer", heading="Meet Kestrel", url="/docs/#meet-kestrel", source="intro.md",
                        module="", chunk_id="intro#0", score=0.5, cited_text=words, start_char_index=0,
                        end_char_index=len(words))
    silent = Citation(title="Primer", heading="Other", url="/docs/#other", source="intro.md", module="",
                      chunk_id="intro#1", score=0.4)
    ask.show(Response(answer="Kestrel is 1.2 m tall.", query="q", citations=[citation, silent]),
             SimpleNamespace(json=False, verbose=False))
    out = capsys.readouterr().out
    assert out.count("\u201c") == 1 and "\x1b" not in out and "\u202e" not in out
    quoted = " ".join(out.split()).split("\u201c")[1].split("\u201d")[0]  # the terminal may wrap it
    assert quoted.startswith("Kestrel is 1.2 m tall.\\x1b[2J\\u202e and more")
    assert quoted.endswith("\u2026") and len(quoted) <= 200 + len("\\x1b\\u202e")


# -- evaluate -----------------------------------------------------------------------------------------------------

def test_cited_text_support_asks_every_key_fact_of_the_cited_texts_not_of_the_answer():
    example = Question("q1", "How tall and heavy is Kestrel?", True, ("intro.md",), ("1.2 m", "24 kg")).to_example()

    def pred(*texts):
        return dspy.Prediction(answer="Kestrel is 1.2 m tall and weighs 24 kg.", citations=list(range(1, len(texts) + 1)),
                               cited_texts=[CitedText(t, 0, len(t)) if t else None for t in texts])

    assert metrics.cited_text_support(example, pred("It is 1.2 m tall.", "It weighs 24 kg."))
    assert not metrics.cited_text_support(example, pred("It is 1.2 m tall.", None))
    assert metrics.cited_words(pred("It is 1.2 m tall.", None)) == ["It is 1.2 m tall.", None]
    assert cited_text_cell(["It is\n1.2 m tall.", None]) == "It is 1.2 m tall.\n(no cited text)"
