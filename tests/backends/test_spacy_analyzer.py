"""The spaCy analyzer: sentences and entities with offsets into the given text."""

from __future__ import annotations

import pytest

from hopindex.backends.nlp import SpacyAnalyzer
from hopindex.backends.protocols import NlpAnalyzer
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.models import TextAnalysis

pytestmark = pytest.mark.integration

TEXT = ("Paris is the capital of France. It hosted the 1900 Summer Olympics. "
        "Barack Obama visited the city in 2009.")


@pytest.fixture(scope="module")
def analyzer() -> SpacyAnalyzer:
    return SpacyAnalyzer()


@pytest.fixture(scope="module")
def result(analyzer: SpacyAnalyzer) -> TextAnalysis:
    return analyzer.analyze_texts([TEXT])[0]


def test_satisfies_protocol(analyzer: SpacyAnalyzer) -> None:
    """The adapter is a structural ``NlpAnalyzer``."""
    assert isinstance(analyzer, NlpAnalyzer)


def test_sentences_split_running_text(result: TextAnalysis) -> None:
    """Three sentences come back as trimmed character ranges of the text."""
    assert [TEXT[s.start:s.end] for s in result.sentences] == [
        "Paris is the capital of France.", "It hosted the 1900 Summer Olympics.",
        "Barack Obama visited the city in 2009."]


def test_entity_offsets_slice_back_to_entity_text(result: TextAnalysis) -> None:
    """Every entity's offsets slice the text to exactly the entity's text."""
    assert result.entities
    assert all(TEXT[e.start:e.end] == e.text for e in result.entities)
    found = {(e.text, e.label) for e in result.entities}
    assert {("Paris", "GPE"), ("France", "GPE"), ("Barack Obama", "PERSON")} <= found


def test_blank_line_starts_a_sentence(analyzer: SpacyAnalyzer) -> None:
    """A paragraph break always ends a sentence, even without final punctuation."""
    text = "Early life\n\nNew York Times reporters met her in Boston"
    analysis = analyzer.analyze_texts([text])[0]
    assert [text[s.start:s.end] for s in analysis.sentences] == [
        "Early life", "New York Times reporters met her in Boston"]
    assert all(e.start >= text.index("New") or e.end <= 10 for e in analysis.entities)


def test_empty_and_blank_texts(analyzer: SpacyAnalyzer) -> None:
    """Empty or whitespace-only texts have no sentences and no entities; order is kept."""
    empty = TextAnalysis(sentences=(), entities=())
    results = analyzer.analyze_texts(["", "   \n ", TEXT])
    assert results[:2] == [empty, empty]
    assert len(results[2].sentences) == 3
    assert analyzer.analyze_texts([]) == []


def test_batches_match_single_texts(analyzer: SpacyAnalyzer) -> None:
    """Analysing texts together gives what analysing each alone gives."""
    texts = [TEXT, "Angela Merkel was born in Hamburg.", "Nothing to see here."]
    together = SpacyAnalyzer(batch_size=2).analyze_texts(texts)
    assert together == [analyzer.analyze_texts([t])[0] for t in texts]


def test_long_texts_beyond_spacy_default_limit(analyzer: SpacyAnalyzer) -> None:
    """Texts past spaCy's default 1,000,000 characters are analysed, not refused."""
    # Mostly whitespace: long in characters, few tokens, so the test stays quick.
    text = "Paris is in France." + " " * 1_000_000 + "Berlin is in Germany."
    analysis = analyzer.analyze_texts([text])[0]
    berlin = [e for e in analysis.entities if e.text == "Berlin"]
    assert berlin
    assert berlin[0].start == text.index("Berlin")
    assert [text[s.start:s.end] for s in analysis.sentences][-1] == "Berlin is in Germany."


def test_text_over_the_configured_limit_is_invalid_input() -> None:
    """A text longer than the configured maximum is refused naming the limit."""
    with pytest.raises(InvalidInputError, match="100"):
        SpacyAnalyzer(max_length=100).analyze_texts(["x" * 101])


def test_unknown_model_is_a_config_error() -> None:
    """A model name spaCy cannot find is a ConfigError naming it."""
    with pytest.raises(ConfigError, match="no_such_spacy_model"):
        SpacyAnalyzer("no_such_spacy_model").analyze_texts(["text"])


def test_noun_chunks_come_from_the_parse_in_text_order(analyzer: SpacyAnalyzer) -> None:
    """Noun chunks (the parser's, loaded on first use) per text, in order, each once; an
    empty batch costs nothing."""
    (chunks, empty) = analyzer.find_noun_chunks(
        ["Marie Curie was a physicist born in Warsaw. Marie Curie won a prize.", ""])
    assert chunks == ("Marie Curie", "a physicist", "Warsaw", "a prize")
    assert empty == ()
    assert analyzer.find_noun_chunks([]) == []
