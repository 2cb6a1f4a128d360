"""Long texts analysed in pieces: the plan of pieces, putting their findings back
together, and the spaCy analyzer over real paragraphs (bounded input per call, the
same findings as one analysis of the whole text, from its start to its end)."""

from __future__ import annotations

import json
import threading
from importlib.resources import files
from itertools import pairwise
from typing import Any

import pytest

from hopindex.backends.nlp import SpacyAnalyzer
from hopindex.backends.nlp import spacy_analyzer as analyzer_module
from hopindex.backends.nlp.pieces import Piece, batches, merge_analyses, plan_pieces
from hopindex.core.models import EntitySpan, Sentence, TextAnalysis

# Real paragraphs, each its own title's page, joined into one long text.
_CORPUS = json.loads((files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json")
                     .read_text(encoding="utf-8"))
PARAGRAPHS = ["".join(sentences).strip() for sentences in _CORPUS.values()]
CLOSING = "Finally, Marie Curie travelled from Warsaw to Stockholm."


def long_text(chars: int, joiner: str = "\n\n") -> str:
    """Paragraphs up to about ``chars`` characters, then a closing one found nowhere else."""
    taken: list[str] = []
    size = 0
    for paragraph in PARAGRAPHS:
        if size >= chars:
            break
        taken.append(paragraph)
        size += len(paragraph) + len(joiner)
    return joiner.join([*taken, CLOSING])


def covered(text: str, pieces: list[Piece]) -> None:
    assert pieces[0].core_start == 0 and pieces[-1].core_end == len(text)
    for before, after in pairwise(pieces):
        assert before.core_end == after.core_start
    for piece in pieces:
        assert piece.start <= piece.core_start < piece.core_end <= piece.end


# -- the plan ---------------------------------------------------------------------------

def test_short_text_is_one_piece() -> None:
    """A text within the piece size is analysed whole, as before pieces existed."""
    assert plan_pieces("Paris is in France.", 100, 10) == [Piece(0, 0, 19, 19)]
    assert plan_pieces("", 100, 10) == [Piece(0, 0, 0, 0)]


def test_cores_tile_the_text_and_end_after_blank_lines() -> None:
    """Cores cover the text end to end, none longer than the piece size, each ending
    after a blank line when one lies in the second half of its stretch."""
    text = long_text(60_000)
    pieces = plan_pieces(text, 10_000, 200)
    covered(text, pieces)
    assert len(pieces) >= 6
    for piece in pieces[:-1]:
        assert 5_000 <= piece.core_end - piece.core_start <= 10_000
        assert text[:piece.core_end].endswith("\n\n")
        # Context of up to 200 characters either side, never starting or ending in a word.
        assert piece.core_start - piece.start <= 200 and piece.end - piece.core_end <= 200
        assert piece.end == len(text) or text[piece.end].isspace()
    for piece in pieces[1:]:
        assert text[piece.start - 1].isspace()


def test_without_blank_lines_cores_end_after_a_sentence_then_at_whitespace() -> None:
    """With no blank line a core ends after a sentence's final punctuation; with no
    punctuation, at whitespace; with neither, at the piece size."""
    text = "One. Two words here. " * 100
    for piece in plan_pieces(text, 300, 20)[:-1]:
        assert text[:piece.core_end].endswith(". ")
    words = "word " * 200
    for piece in plan_pieces(words, 300, 20)[:-1]:
        assert words[:piece.core_end].endswith(" ")
    solid = "x" * 1000
    assert [(p.core_start, p.core_end) for p in plan_pieces(solid, 300, 20)] == [
        (0, 300), (300, 600), (600, 900), (900, 1000)]


def test_batches_bound_items_and_characters() -> None:
    """Runs hold at most the item count and the characters given, except an item that is
    longer than that alone."""
    assert [list(r) for r in batches([40, 40, 40, 500, 10, 10], 64, 100)] == [
        [0, 1], [2], [3], [4, 5]]
    assert [list(r) for r in batches([1] * 5, 2, 100)] == [[0, 1], [2, 3], [4]]
    assert list(batches([], 2, 100)) == []


# -- putting findings back together -----------------------------------------------------

def test_merge_keeps_what_each_core_answers_for() -> None:
    """Sentences and entities are taken from the piece whose core they start in, moved to
    offsets in the whole text; findings in a piece's context are left to its neighbour."""
    text = "Alpha Beta.\n\nGamma Delta."
    pieces = [Piece(0, 0, 13, 18), Piece(6, 13, 25, 25)]
    first = TextAnalysis(sentences=(Sentence(0, 11), Sentence(13, 18)),
                         entities=(EntitySpan("Alpha", "PERSON", 0, 5),
                                   EntitySpan("Gamma", "ORG", 13, 18)))
    second = TextAnalysis(sentences=(Sentence(0, 5), Sentence(7, 19)),
                          entities=(EntitySpan("Beta", "PERSON", 0, 4),
                                    EntitySpan("Gamma", "PERSON", 7, 12)))
    merged = merge_analyses(text, pieces, [first, second])
    assert [text[s.start:s.end] for s in merged.sentences] == ["Alpha Beta.", "Gamma Delta."]
    assert merged.entities == (EntitySpan("Alpha", "PERSON", 0, 5),
                               EntitySpan("Gamma", "PERSON", 13, 18))


def test_a_sentence_across_a_cut_is_one_when_both_pieces_see_it_so() -> None:
    """A sentence both pieces see running across their cut is one sentence; when the
    second piece starts a sentence at the cut, the cut is a sentence bound."""
    text = "one two three four five six"
    pieces = [Piece(0, 0, 14, 19), Piece(8, 14, 27, 27)]
    across = TextAnalysis(sentences=(Sentence(0, 19),), entities=())
    merged = merge_analyses(text, pieces, [across, TextAnalysis((Sentence(0, 19),), ())])
    assert merged.sentences == (Sentence(0, 27),)
    split = merge_analyses(text, pieces, [across, TextAnalysis((Sentence(6, 19),), ())])
    assert [text[s.start:s.end] for s in split.sentences] == ["one two three", "four five six"]


# -- the analyzer over real text --------------------------------------------------------

class _Recording:
    """The loaded pipeline, noting the length of every text and of every call's batch."""

    def __init__(self, nlp: Any) -> None:
        self._nlp = nlp
        self.texts: list[int] = []
        self.calls: list[int] = []

    def pipe(self, texts: list[str], batch_size: int) -> Any:
        self.texts.extend(len(t) for t in texts)
        self.calls.append(sum(len(t) for t in texts))
        return self._nlp.pipe(texts, batch_size=batch_size)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> _Recording:
    nlp, _ = analyzer_module._load(analyzer_module.DEFAULT_MODEL)
    spy = _Recording(nlp)
    lock = threading.Lock()
    monkeypatch.setattr(analyzer_module, "_load", lambda model: (spy, lock))
    return spy


@pytest.mark.integration
def test_long_text_is_analysed_in_bounded_pieces_to_its_end(recording: _Recording) -> None:
    """A 60,000-character text reaches spaCy only in pieces of at most 10,000
    characters plus context, at most 100,000 characters per call, and its sentences and
    entities are found through to its last paragraph, at offsets into the whole text."""
    text = long_text(60_000)
    analysis = SpacyAnalyzer().analyze_texts([text])[0]
    assert max(recording.texts) <= 10_400
    assert len(recording.texts) >= 6 and max(recording.calls) <= 100_000
    assert text[analysis.sentences[-1].start:analysis.sentences[-1].end] == CLOSING
    assert all(text[e.start:e.end] == e.text for e in analysis.entities)
    closing = {e.text for e in analysis.entities if e.start >= text.index(CLOSING)}
    assert {"Marie Curie", "Warsaw", "Stockholm"} <= closing
    assert analysis.entities[0].end < 10_000  # and from its start


@pytest.mark.integration
@pytest.mark.parametrize(("joiner", "run_on"), [("\n\n", False), (" ", False), (" ", True)],
                         ids=["paragraphs", "one-line", "run-on"])
def test_pieces_find_what_the_whole_text_gives(joiner: str, run_on: bool) -> None:
    """In pieces the analyzer finds exactly the sentences and entities of one analysis of
    the whole text, whether pieces end at blank lines, after sentences (a text with no
    blank line) or inside sentences that both pieces see running across the cut (no
    full stops either: nine sentences in 26,000 characters). Small pieces here, so that
    there are many cuts."""
    text = long_text(25_000, joiner)
    if run_on:
        text = text.replace(". ", " ")
    whole = SpacyAnalyzer(piece_chars=100_000).analyze_texts([text])[0]
    pieces = SpacyAnalyzer(piece_chars=2_000).analyze_texts([text])[0]
    assert len(plan_pieces(text, 2_000, 200)) >= 12
    assert pieces.sentences == whole.sentences
    assert pieces.entities == whole.entities
    if run_on:
        assert len(whole.sentences) < 20


@pytest.mark.integration
def test_noun_chunks_of_a_long_text_come_once_in_order() -> None:
    """Noun chunks of a text analysed in pieces are those of the whole text: each once,
    in text order, the last paragraph's included."""
    text = long_text(6_000)
    whole = SpacyAnalyzer(piece_chars=100_000).find_noun_chunks([text])[0]
    pieces = SpacyAnalyzer(piece_chars=1_500).find_noun_chunks([text])[0]
    assert pieces == whole
    assert "Stockholm" in pieces
