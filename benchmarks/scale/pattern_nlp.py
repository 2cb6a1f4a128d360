"""An NLP analyser for the synthetic corpus alone, in place of spaCy for ``--phases-only``.

The corpus's sentences end in ". " and every name in it (people, places,
organisations) is a run of capitalised words, with "the" before some organisations
and nothing else capitalised except a sentence's first word. So sentence bounds and
the entities spaCy's model would find (with the labels it would give) come from two
regular expressions, at a cost that does not hide the runtime's own: spaCy takes
about 7 ms per document on this machine, which is what limits a full ingest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corpus import GIVEN

from hopindex.core.models import EntitySpan, Sentence, TextAnalysis

_SENTENCE_END = re.compile(r"(?<=\.)\s+")
_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
# A sentence's first word is capitalised without being a name.
_NOT_NAMES = frozenset({"In", "A", "Before"})
_ORG_WORDS = ("Institute", "Company", "University", "Observatory", "Trust", "College")
_GIVEN = frozenset(GIVEN)


def _label(name: str) -> str:
    if name.split(" ", 1)[0] in _GIVEN:
        return "PERSON"
    if name.endswith(_ORG_WORDS):
        return "ORG"
    return "GPE"


def analyze(text: str) -> TextAnalysis:
    sentences, start = [], 0
    for cut in _SENTENCE_END.finditer(text):
        sentences.append(Sentence(start, cut.start()))
        start = cut.end()
    if start < len(text):
        sentences.append(Sentence(start, len(text)))
    entities = [EntitySpan(m.group(), _label(m.group()), m.start(), m.end())
                for m in _NAME.finditer(text) if m.group() not in _NOT_NAMES]
    return TextAnalysis(sentences=tuple(sentences), entities=tuple(entities))


class PatternNlp:
    """``NlpAnalyzer`` over the synthetic corpus's patterns."""

    def analyze_texts(self, texts: Sequence[str]) -> list[TextAnalysis]:
        return [analyze(text) for text in texts]

    def find_noun_chunks(self, texts: Sequence[str]) -> list[tuple[str, ...]]:
        # No method the harness runs asks for noun chunks (the extractive one does not).
        return [tuple(m.group() for m in _NAME.finditer(text)) for text in texts]
