"""CompactRAG's two local modules between its LLM calls: the answer extractor and the
sub-question rewriter, each as a model-free default and as a local transformers model.

The local models are loaded from a folder written by ``save_pretrained`` and never from
a hub; ``transformers`` is imported only when one is opened, so importing this module
(and running the model-free defaults) does not pay for torch. The defaults are a
departure (docs/methods.md): the paper's trained weights are not published.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hopindex.core.errors import BackendError, ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

EXTRACTOR_VARIABLE = "HOPINDEX_COMPACTRAG_EXTRACTOR"
REWRITER_VARIABLE = "HOPINDEX_COMPACTRAG_REWRITER"


@dataclass(frozen=True, slots=True)
class QaContext:
    """One retrieved atomic QA unit offered to the extractor, with its retrieval score."""

    question: str
    answer: str
    score: float


@dataclass(frozen=True, slots=True)
class ExtractedAnswer:
    """The answer span of a sub-question; ``source_index`` is the position in the given
    contexts of the unit the span came from (None when there was nothing to extract)."""

    text: str
    score: float
    source_index: int | None


NO_ANSWER = ExtractedAnswer(text="", score=0.0, source_index=None)


class AnswerExtractor(Protocol):
    def extract_answer(self, question: str, contexts: Sequence[QaContext]) -> ExtractedAnswer:
        ...


class QuestionRewriter(Protocol):
    def rewrite_question(self, question: str, referenced_answer: str | None,
                         referenced_question: str | None) -> str:
        ...


class TopAnswerExtractor:
    """The answer of the best-scored unit with a non-blank answer, as it stands.

    Ties go to the earlier unit, so contexts given in rank order keep their rank. The
    score is that unit's retrieval score.
    """

    def extract_answer(self, question: str, contexts: Sequence[QaContext]) -> ExtractedAnswer:
        best: int | None = None
        for index, context in enumerate(contexts):
            if context.answer.strip() and (best is None or context.score > contexts[best].score):
                best = index
        if best is None:
            return NO_ANSWER
        chosen = contexts[best]
        return ExtractedAnswer(text=chosen.answer.strip(), score=chosen.score, source_index=best)


# Markers a decomposition leaves for an earlier answer: "#1" (MuSiQue, Self-Ask) or a
# bracketed answer/reference/entity word, optionally numbered ("[ans]", "<ref>",
# "{answer_1}", "[answer to Q1]", "<A1>").
_PLACEHOLDER = re.compile(
    r"#\d+|[\[<{]\s*(?:answer|ans|reference|ref|entity|a(?=\d))(?![a-z])[^\[\]<>{}]{0,30}[\]>}]",
    re.IGNORECASE)
# Nouns a demonstrative can point with ("this film"): the whole phrase is replaced.
_REFERENT_NOUNS = (
    "person|people|man|woman|men|women|individual|figure|one|entity|thing|group|band|team|"
    "club|company|organization|organisation|institution|university|school|college|film|movie|"
    "book|novel|song|album|work|show|series|game|character|actor|actress|director|singer|"
    "musician|artist|author|writer|player|politician|leader|city|town|village|country|state|"
    "place|location|region|river|mountain|building|station|event|battle|war|award|magazine|"
    "newspaper|publication|network|channel|language|species")
_REFERENCE = re.compile(
    rf"\b(?:(?P<phrase>(?:this|that|these|those|the\s+same|the\s+aforementioned|"
    rf"the\s+above(?:-mentioned)?)\s+(?:{_REFERENT_NOUNS}))"
    r"|(?P<that>that)(?=\s*(?:[?.!,;]|$))"
    r"|(?P<subject>this|he|she|it|they|him|them)"
    r"|(?P<possessive>his|its|their)"
    r"|(?P<her>her))\b",
    re.IGNORECASE)
# After these, "her" is an object ("gave her the prize"); before anything else it is a
# possessive ("her husband").
_OBJECT_FOLLOWERS = frozenset({
    "a", "an", "the", "to", "in", "on", "at", "for", "with", "by", "from", "of", "as", "and",
    "or", "but", "when", "while", "after", "before", "until", "since", "during", "if", "than",
    "first", "last", "again", "once", "twice", "then", "there", "later"})
_SENTENCE_END = re.compile(r"(?:^|[.!?])[\s\"'\u201c\u2018(\[]*$")


def _normalise(text: str | None) -> str:
    return " ".join((text or "").split())


class SubstitutionRewriter:
    """Grounds a sub-question by writing the referenced answer into it, by fixed rules.

    Applied in order, the first that fits decides:

    1. No answer (None or blank), or a blank question: the question unchanged.
    2. Placeholders (``#1``, ``[ans]``, ``<ref>``, ``{answer_1}``, ``<A1>``...): every
       one is replaced by the answer.
    3. The answer already appears in the question (ignoring case): unchanged.
    4. The leftmost reference is replaced, and only that one: a demonstrative phrase
       ("this person", "that film", "the same city") or "the aforementioned"/"the above"
       phrase becomes the answer; "this", "he", "she", "it", "they", "him", "them" and a
       "that" closing a clause become the answer; "his", "its", "their" become
       "<answer>'s"; "her" is an object before an article, a preposition, a few adverbs or
       the end, else a possessive. A capitalised word in mid-sentence is taken as part
       of a name ("It Happened One Night"), not a reference.
    5. Otherwise " (<answer>)" is appended, so retrieval still sees the entity.

    The answer is inserted verbatim (whitespace collapsed); ``referenced_question`` is not
    needed by these rules and is accepted for the protocol.
    """

    def rewrite_question(self, question: str, referenced_answer: str | None,
                         referenced_question: str | None = None) -> str:
        answer = _normalise(referenced_answer)
        if not answer or not question.strip():
            return question
        if _PLACEHOLDER.search(question):
            return _PLACEHOLDER.sub(lambda _match: answer, question)
        if answer.casefold() in question.casefold():
            return question
        for match in _REFERENCE.finditer(question):
            if match.group(0)[0].isupper() and not _SENTENCE_END.search(
                    question[:match.start()]):
                continue
            replacement = answer
            if match.group("possessive") or (match.group("her")
                                             and not _her_is_object(question, match.end())):
                replacement = f"{answer}'s"
            return question[:match.start()] + replacement + question[match.end():]
        return f"{question.rstrip()} ({answer})"


def _her_is_object(question: str, end: int) -> bool:
    following = re.match(r"\s*([A-Za-z]+)", question[end:])
    return following is None or following.group(1).lower() in _OBJECT_FOLLOWERS


# --- Local transformers models ---------------------------------------------------------

# The extractor reads the retrieved units as one context laid out as the authors' code
# trains and runs its extractor: "question\nanswer" per unit, units a blank line apart.
_UNIT_LAYOUT = "{question}\n{answer}"
_CONTEXT_SEPARATOR = "\n\n"
# The authors' extractor reads 384 tokens (question and context), their rewriter 128
# tokens in and 64 out, decoded by a 4-beam search: the sizes both were trained at.
_EXTRACTOR_MAX_TOKENS = 384
_REWRITER_MAX_TOKENS = 128
_MAX_REWRITE_TOKENS = 64
_REWRITE_BEAMS = 4
_MAX_ANSWER_TOKENS = 30
# The rewriter's input as the authors' code trains and runs it (see rewrite_prompt).
_REWRITE_TEMPLATE = "Q: {question} | prev_answer: {answer}"


@dataclass(frozen=True, slots=True)
class _Loaded:
    tokenizer: Any
    model: Any
    max_tokens: int
    # Fast tokenizers keep truncation and padding state in Rust and refuse concurrent
    # calls that change it ("Already borrowed"), so calls through one are serialised.
    lock: threading.Lock


# One load per (role, folder) in the process: every query of every index shares it.
_LOADED: dict[tuple[str, str], _Loaded] = {}
_LOADED_LOCK = threading.Lock()


def _open_model(path: str, *, variable: str, role: str) -> _Loaded:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"{variable}: {path!r} is not a folder; it must hold a {role} "
                          f"model and its tokenizer saved with save_pretrained")
    key = (role, str(folder.resolve()))
    with _LOADED_LOCK:
        loaded = _LOADED.get(key)
        if loaded is None:
            loaded = _load(key[1], variable=variable, role=role)
            _LOADED[key] = loaded
        return loaded


def _load(location: str, *, variable: str, role: str) -> _Loaded:
    started = time.monotonic()
    # Set before the import: huggingface_hub reads these once, and a query must never
    # reach for the network to resolve a model.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # untyped API
        model_class: Any = (transformers.AutoModelForQuestionAnswering if role == "extractor"
                            else transformers.AutoModelForSeq2SeqLM)
        tokenizer: Any = transformers.AutoTokenizer.from_pretrained(location,
                                                                    local_files_only=True)
        model: Any = model_class.from_pretrained(location, local_files_only=True)
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError...
        raise ConfigError(f"{variable}: cannot load a {role} model from {location!r}: "
                          f"{exc}") from exc
    if not tokenizer.is_fast:
        # Spans are cut from the text by the offsets only fast tokenizers report.
        raise ConfigError(f"{variable}: the tokenizer in {location!r} is not a fast "
                          f"(tokenizers) tokenizer; save one with tokenizer.json")
    model.eval()
    # A smaller model (the tests' tiny ones) reads what fits it.
    cap = _EXTRACTOR_MAX_TOKENS if role == "extractor" else _REWRITER_MAX_TOKENS
    limits = [cap, int(tokenizer.model_max_length)]
    if role == "extractor":
        limits.append(int(getattr(model.config, "max_position_embeddings", cap)))
    log.info("compactrag_model_loaded", role=role, location=location,
             duration_s=round(time.monotonic() - started, 3))
    return _Loaded(tokenizer=tokenizer, model=model, max_tokens=min(limits),
                   lock=threading.Lock())


def join_contexts(contexts: Sequence[QaContext]) -> tuple[str, list[tuple[int, int]]]:
    """The extractor's context text and the (start, end) offsets of each unit's block."""
    spans: list[tuple[int, int]] = []
    blocks: list[str] = []
    offset = 0
    for context in contexts:
        block = _UNIT_LAYOUT.format(question=_normalise(context.question),
                                    answer=_normalise(context.answer)).strip()
        spans.append((offset, offset + len(block)))
        blocks.append(block)
        offset += len(block) + len(_CONTEXT_SEPARATOR)
    return _CONTEXT_SEPARATOR.join(blocks), spans


class HfSpanExtractor:
    """An extractive question-answering model (RoBERTa-base in the paper) picking the
    answer span from the retrieved units, read as one context of at most 384 tokens
    with the question.

    Departures (docs/methods.md): the authors' code cuts a longer context off and takes
    the start and end tokens' argmax apart; here a longer context is read in windows
    overlapping by 128 tokens (as the authors train), and the best span of any window
    wins, within the context, start before end, at most 30 tokens."""

    def __init__(self, path: str) -> None:
        self._loaded = _open_model(path, variable=EXTRACTOR_VARIABLE, role="extractor")

    def extract_answer(self, question: str, contexts: Sequence[QaContext]) -> ExtractedAnswer:
        if not contexts:
            return NO_ANSWER
        context, spans = join_contexts(contexts)
        try:
            window, start, end, score, offsets = self._best_span(question, context)
        except Exception as exc:  # torch and tokenizers raise many unrelated types
            raise BackendError(f"answer extraction failed: {exc}") from exc
        char_start, char_end = offsets[window][start][0], offsets[window][end][1]
        source = bisect.bisect_right([start for start, _ in spans], char_start) - 1
        # A span never runs past its unit's block into the next unit, and one running
        # from the question into the answer is read on one line.
        text = _normalise(context[char_start:min(char_end, spans[source][1])])
        return ExtractedAnswer(text=text, score=score, source_index=source)

    def _best_span(self, question: str, context: str
                   ) -> tuple[int, int, int, float, list[list[list[int]]]]:
        import torch

        loaded = self._loaded
        length = loaded.max_tokens
        with loaded.lock:
            question = _fit_question(loaded.tokenizer, question, length // 2)
            encoded = loaded.tokenizer(
                question, context, truncation="only_second", max_length=length,
                stride=length // 3, return_overflowing_tokens=True,
                return_offsets_mapping=True, padding=True, return_tensors="pt")
        offsets = encoded["offset_mapping"].tolist()
        windows = len(offsets)
        in_context = torch.tensor([[sequence == 1 for sequence in encoded.sequence_ids(i)]
                                   for i in range(windows)])
        inputs = {name: encoded[name] for name in loaded.tokenizer.model_input_names
                  if name in encoded}
        with torch.inference_mode():
            output = loaded.model(**inputs)
        best: tuple[int, int, int, float] | None = None
        for window in range(windows):
            mask = in_context[window]
            if not bool(mask.any()):
                continue
            start_p = output.start_logits[window].masked_fill(~mask, float("-inf")).softmax(-1)
            end_p = output.end_logits[window].masked_fill(~mask, float("-inf")).softmax(-1)
            # Spans start before they end and are at most _MAX_ANSWER_TOKENS long.
            pairs = torch.triu(torch.tril(start_p[:, None] * end_p[None, :],
                                          _MAX_ANSWER_TOKENS - 1))
            flat = int(torch.argmax(pairs))
            start, end = divmod(flat, pairs.shape[1])
            score = float(pairs[start, end])
            if best is None or score > best[3]:
                best = (window, start, end, score)
        if best is None:
            raise ValueError("the question left no room for the context")
        return *best, offsets


def _fit_question(tokenizer: Any, question: str, max_tokens: int) -> str:
    """The question cut to ``max_tokens`` tokens, so the context always keeps room."""
    encoded = tokenizer(question, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    if len(offsets) <= max_tokens:
        return question
    return question[:offsets[max_tokens - 1][1]]


def rewrite_prompt(question: str, answer: str) -> str:
    """The rewriter's input, the sub-question then the answer grounding it, as the
    authors' code lays it out: a rewriter trained by their scripts reads it as is."""
    return _REWRITE_TEMPLATE.format(question=_normalise(question), answer=_normalise(answer))


class HfRewriter:
    """A sequence-to-sequence model (flan-t5-small in the paper) rewriting the sub-question
    around the referenced answer, decoded by a 4-beam search as the authors' code does.

    Departure (docs/methods.md): a rewrite that is blank or drops the answer would lose
    the grounding it exists for, so then the ``SubstitutionRewriter`` result is returned
    instead. No answer: the question unchanged, without running the model. The
    referenced question is not part of the authors' input and is not sent.
    """

    def __init__(self, path: str) -> None:
        self._loaded = _open_model(path, variable=REWRITER_VARIABLE, role="rewriter")
        self._fallback = SubstitutionRewriter()

    def rewrite_question(self, question: str, referenced_answer: str | None,
                         referenced_question: str | None = None) -> str:
        answer = _normalise(referenced_answer)
        if not answer or not question.strip():
            return question
        try:
            rewritten = self.generate_rewrite(rewrite_prompt(question, answer))
        except Exception as exc:  # torch and tokenizers raise many unrelated types
            raise BackendError(f"sub-question rewriting failed: {exc}") from exc
        if rewritten and answer.casefold() in rewritten.casefold():
            return rewritten
        return self._fallback.rewrite_question(question, answer, referenced_question)

    def generate_rewrite(self, prompt: str) -> str:
        """The model's raw rewrite of ``prompt``, whitespace collapsed."""
        import torch

        loaded = self._loaded
        with loaded.lock:
            encoded = loaded.tokenizer([prompt], truncation=True, max_length=loaded.max_tokens,
                                       return_tensors="pt")
        inputs = {name: encoded[name] for name in loaded.tokenizer.model_input_names
                  if name in encoded}
        with torch.inference_mode():
            generated = loaded.model.generate(**inputs, max_length=_MAX_REWRITE_TOKENS,
                                              do_sample=False, num_beams=_REWRITE_BEAMS,
                                              early_stopping=True)
        with loaded.lock:
            text = loaded.tokenizer.decode(generated[0], skip_special_tokens=True)
        return _normalise(str(text))


def open_modules(extractor_path: str, rewriter_path: str
                 ) -> tuple[AnswerExtractor, QuestionRewriter]:
    """The extractor and rewriter configured by their folders; "" picks the model-free
    default (``TopAnswerExtractor``, ``SubstitutionRewriter``)."""
    extractor: AnswerExtractor = (HfSpanExtractor(extractor_path) if extractor_path.strip()
                                  else TopAnswerExtractor())
    rewriter: QuestionRewriter = (HfRewriter(rewriter_path) if rewriter_path.strip()
                                  else SubstitutionRewriter())
    return extractor, rewriter
