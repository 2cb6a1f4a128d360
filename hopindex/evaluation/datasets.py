"""Multi-hop QA datasets: questions, answers and gold passages in one shape.

Gold passages are exact strings, ``title + "\\n" + text``, built the way each
dataset's public retrieval code builds them (HippoRAG, PropRAG, BridgeRAG), so
Recall@k here is comparable with published figures. The join of a paragraph's
sentences differs by dataset and is the detail most easily got wrong: HotpotQA
sentences carry their own leading spaces (joined with ""), 2WikiMultiHopQA's do
not (joined with " ").
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.core.json_input import JsonInputError, JsonLimits, parse_json
from hopindex.readers import RawDocument


class DatasetFormat(enum.StrEnum):
    AUTO = "auto"
    HOTPOTQA = "hotpotqa"
    MUSIQUE = "musique"
    TWOWIKI = "2wikimultihopqa"


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    answers: tuple[str, ...]  # gold answer first, then its aliases
    gold_passages: tuple[str, ...]
    kind: str


# 2Wiki question types that HotpotQA does not have; "comparison" is in both.
_TWOWIKI_ONLY_TYPES = frozenset({"compositional", "inference", "bridge_comparison"})
_SENTENCE_JOIN = {DatasetFormat.HOTPOTQA: "", DatasetFormat.TWOWIKI: " "}


@dataclass(frozen=True)
class _Paragraph:
    title: str
    text: str
    where: str


# What a record of each format holds, and one whole record: what an error about a
# record that does not fit says it should look like (docs/evaluation.md has more).
_CONTEXT_FIELDS = ('{"_id" (or "id"), "question", "answer", "context": [[title, [sentence, '
                   '...]], ...], "supporting_facts": [[title, sentence_index], ...]}')
_CONTEXT_EXAMPLE = ('{"_id": "q1", "question": "Where was the wife of Pierre Curie born?", '
                    '"answer": "Warsaw", "context": [["Marie Curie", ["Marie Curie was born in '
                    'Warsaw."]], ["Pierre Curie", ["Pierre Curie married Marie Curie."]]], '
                    '"supporting_facts": [["Marie Curie", 0], ["Pierre Curie", 0]]}')
_MUSIQUE_FIELDS = ('{"id", "question", "answer", "paragraphs": [{"title", "paragraph_text", '
                   '"is_supporting"}, ...]}')
_MUSIQUE_EXAMPLE = ('{"id": "2hop__1_2", "question": "Where was the wife of Pierre Curie '
                    'born?", "answer": "Warsaw", "paragraphs": [{"title": "Marie Curie", '
                    '"paragraph_text": "Marie Curie was born in Warsaw.", "is_supporting": '
                    'true}]}')
_SHAPES = {DatasetFormat.HOTPOTQA: ("HotpotQA", _CONTEXT_FIELDS, _CONTEXT_EXAMPLE),
           DatasetFormat.TWOWIKI: ("2WikiMultiHopQA", _CONTEXT_FIELDS, _CONTEXT_EXAMPLE),
           DatasetFormat.MUSIQUE: ("MuSiQue", _MUSIQUE_FIELDS, _MUSIQUE_EXAMPLE)}
_DOCS = "see docs/evaluation.md"


def _fail(where: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, where=where)


class _RecordError(Exception):
    """What is wrong with one record: ``field`` inside it (``:context[1]``; empty for the
    record itself) and the message. ``shape``: the record lacks what its format needs,
    so the error goes on to say what a record of that format holds."""

    def __init__(self, message: str, field: str = "", *, shape: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.shape = shape


@dataclass(frozen=True)
class _Records:
    """A questions file's records. ``lines``: the line of each (JSON Lines); for a JSON
    list they are found in ``text`` only when an error needs one."""

    path: Path
    items: list[dict[str, Any]]
    text: str = ""
    lines: tuple[int, ...] = ()

    def origin(self, index: int) -> str:
        """The record as its paragraphs' origin: cheap, for every record."""
        return f"{self.path}[{index}]"

    def place(self, index: int) -> str:
        """The file, the line the record starts on and, in a JSON list, its index."""
        if self.lines:
            return f"{self.path}:{self.lines[index]}"
        return f"{self.path}:{_element_lines(self.text, index)[index]}[{index}]"

    def error(self, index: int, problem: _RecordError,
              fmt: DatasetFormat) -> InvalidInputError:
        message = problem.message
        if problem.shape:
            name, fields, example = _SHAPES[fmt]
            message += (f"; a {name} record holds {fields}, for example {example} "
                        f"({_DOCS})")
        return _fail(self.place(index) + problem.field, message)


def _element_lines(text: str, last: int) -> list[int]:
    """The line (from 1) each element of the JSON list ``text`` starts on, up to element
    ``last``. Run only for an error: the text has parsed within the limits already, so
    the standard decoder can step from element to element."""
    decoder = json.JSONDecoder()
    pos = _next_element(text, text.index("[") + 1)
    line, counted = 1, 0
    lines: list[int] = []
    while len(lines) <= last:
        line += text.count("\n", counted, pos)
        counted = pos
        lines.append(line)
        _, end = decoder.raw_decode(text, pos)
        pos = _next_element(text, end)
    return lines


def _next_element(text: str, pos: int) -> int:
    """Past the whitespace and comma between two elements of a JSON list."""
    while pos < len(text) and (text[pos] in " \t\r\n,"):
        pos += 1
    return pos


def _load_records(path: Path) -> _Records:
    """A JSON list of records, or JSON Lines (the official MuSiQue files are .jsonl)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise _fail(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(str(path), f"cannot read: {exc}") from None
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        items: list[Any] = []
        lines: list[int] = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                items.append(_parse_json(line, f"{path}:{lineno}"))
                lines.append(lineno)
        records = _Records(path, items, lines=tuple(lines))
    else:
        loaded = _parse_json(text, str(path))
        if not isinstance(loaded, list):
            raise _fail(str(path), f"expected a JSON list of question records, "
                                   f"got {type(loaded).__name__} ({_DOCS})")
        records = _Records(path, loaded, text=text)
    for index, record in enumerate(records.items):
        if not isinstance(record, dict):
            raise _fail(records.place(index), f"expected a question object, "
                                              f"got {type(record).__name__} ({_DOCS})")
    return records


def _parse_json(text: str, where: str) -> Any:
    # Bounded like every input read (no string limit but the text's own length).
    try:
        return parse_json(text, JsonLimits(max_string_chars=len(text)))
    except JsonInputError as exc:
        raise _fail(where, exc.described) from None


def _family(record: dict[str, Any]) -> DatasetFormat | None:
    """The format a record's keys decide, or None when HotpotQA and 2Wiki look alike."""
    if "evidences" in record or record.get("type") in _TWOWIKI_ONLY_TYPES:
        return DatasetFormat.TWOWIKI
    if "level" in record:
        return DatasetFormat.HOTPOTQA
    return None


def _sentence_lists(records: list[dict[str, Any]]) -> Iterator[list[Any]]:
    """Each context paragraph's sentences, where a record has the expected shape."""
    for record in records:
        context = record.get("context")
        if isinstance(context, list):
            for pair in context:
                if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], list):
                    yield pair[1]


def _detect_format(records: _Records) -> DatasetFormat:
    """Tell the format from record keys; raise naming the file when nothing fits."""
    items = records.items
    if not items:
        return DatasetFormat.HOTPOTQA  # nothing to parse: any format yields no questions
    first = items[0]
    if "paragraphs" in first:
        return DatasetFormat.MUSIQUE
    if not ("context" in first and "supporting_facts" in first):
        raise _fail(records.place(0), f"unknown question format (keys: {sorted(first)}); "
                    f"expected HotpotQA or 2WikiMultiHopQA records {_CONTEXT_FIELDS}, for "
                    f"example {_CONTEXT_EXAMPLE}, or MuSiQue records {_MUSIQUE_FIELDS} "
                    f"({_DOCS})")
    for record in items:
        family = _family(record)
        if family is not None:
            return family
    # Same keys in both: only the sentence spacing tells them apart, and only where a
    # paragraph has several sentences to join; with one each, both read the same.
    sentences = list(_sentence_lists(items))
    if any(isinstance(s, str) and s[:1].isspace() for later in sentences for s in later[1:]):
        return DatasetFormat.HOTPOTQA
    if all(len(paragraph) <= 1 for paragraph in sentences):
        return DatasetFormat.HOTPOTQA
    raise _fail(str(records.path), "cannot tell HotpotQA (sentences joined with \"\") from "
                                   "2WikiMultiHopQA (joined with \" \"); pass the format "
                                   "explicitly: --format hotpotqa or --format 2wiki")


def _field(record: dict[str, Any], name: str, kind: type, at: str = "") -> Any:
    if name not in record:
        raise _RecordError(f"missing field {name!r}", at, shape=True)
    value = record[name]
    if not isinstance(value, kind):
        raise _RecordError(f"field {name!r} must be {kind.__name__}, got "
                           f"{type(value).__name__}", f"{at}:{name}", shape=True)
    return value


def _qid(record: dict[str, Any]) -> str:
    for key in ("_id", "id"):
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    raise _RecordError("missing field '_id' or 'id' (the question id)", shape=True)


def _context_paragraphs(record: dict[str, Any], fmt: DatasetFormat,
                        origin: str) -> list[_Paragraph]:
    """A HotpotQA/2Wiki context ``[[title, [sentences]], ...]`` as paragraphs."""
    context = _field(record, "context", list)
    joiner = _SENTENCE_JOIN[fmt]
    paragraphs: list[_Paragraph] = []
    for index, pair in enumerate(context):
        at = f":context[{index}]"
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], list) and all(isinstance(s, str) for s in pair[1])):
            raise _RecordError("expected [title, [sentence, ...]]", at, shape=True)
        paragraphs.append(_Paragraph(pair[0], joiner.join(pair[1]), origin + at))
    return paragraphs


def _musique_paragraphs(record: dict[str, Any], origin: str) -> list[tuple[_Paragraph, bool]]:
    raw = _field(record, "paragraphs", list)
    paragraphs: list[tuple[_Paragraph, bool]] = []
    for index, item in enumerate(raw):
        at = f":paragraphs[{index}]"
        if not isinstance(item, dict):
            raise _RecordError("expected a paragraph object", at, shape=True)
        title = _field(item, "title", str, at)
        text = _field(item, "paragraph_text", str, at)
        paragraphs.append((_Paragraph(title, text, origin + at),
                           bool(item.get("is_supporting"))))
    return paragraphs


def _supporting_titles(record: dict[str, Any]) -> list[str]:
    facts = _field(record, "supporting_facts", list)
    titles: list[str] = []
    for index, fact in enumerate(facts):
        if not (isinstance(fact, list) and fact and isinstance(fact[0], str)):
            raise _RecordError("expected [title, sentence_index]",
                               f":supporting_facts[{index}]", shape=True)
        if fact[0] not in titles:
            titles.append(fact[0])
    return titles


def _unique(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _answers(record: dict[str, Any]) -> tuple[str, ...]:
    answer = _field(record, "answer", str)
    aliases = record.get("answer_aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise _RecordError("field 'answer_aliases' must be a list of strings",
                           ":answer_aliases")
    return _unique([answer, *aliases])


def _question(record: dict[str, Any], fmt: DatasetFormat, origin: str) -> Question:
    qid = _qid(record)
    text = _field(record, "question", str)
    answers = _answers(record)
    if fmt is DatasetFormat.MUSIQUE:
        paragraphs = _musique_paragraphs(record, origin)
        gold = [f"{p.title}\n{p.text}" for p, supporting in paragraphs if supporting]
        hops = qid.split("__", 1)[0] if "__" in qid else "musique"
        kind = hops if record.get("answerable", True) else f"{hops}-unanswerable"
    else:
        by_title: dict[str, str] = {}
        for paragraph in _context_paragraphs(record, fmt, origin):
            by_title.setdefault(paragraph.title, paragraph.text)
        gold = []
        for title in _supporting_titles(record):
            if title not in by_title:
                raise _RecordError(f"supporting title {title!r} is not in the question's "
                                   f"context", ":supporting_facts")
            gold.append(f"{title}\n{by_title[title]}")
        kind = str(record.get("type") or "unknown")
    return Question(qid=qid, question=text, answers=answers, gold_passages=_unique(gold),
                    kind=kind)


def _resolve(records: _Records, fmt: DatasetFormat | str) -> DatasetFormat:
    try:
        chosen = DatasetFormat(fmt)
    except ValueError:
        accepted = ", ".join(f.value for f in DatasetFormat)
        raise _fail("format", f"unknown dataset format {fmt!r}; accepted: {accepted}") from None
    return _detect_format(records) if chosen is DatasetFormat.AUTO else chosen


def load_questions(path: Path | str,
                   fmt: DatasetFormat | str = DatasetFormat.AUTO) -> list[Question]:
    """Questions with answers and exact-string gold passages; a bad record raises naming
    the file, the record's line and index, and, when it lacks what its format needs, the
    fields it should hold with an example."""
    records = _load_records(Path(path))
    chosen = _resolve(records, fmt)
    questions: list[Question] = []
    for index, record in enumerate(records.items):
        try:
            questions.append(_question(record, chosen, records.origin(index)))
        except _RecordError as problem:
            raise records.error(index, problem, chosen) from None
    return questions


def _all_paragraphs(records: _Records, fmt: DatasetFormat) -> Iterator[_Paragraph]:
    for index, record in enumerate(records.items):
        origin = records.origin(index)
        try:
            if fmt is DatasetFormat.MUSIQUE:
                paragraphs = [p for p, _ in _musique_paragraphs(record, origin)]
            else:
                paragraphs = _context_paragraphs(record, fmt, origin)
        except _RecordError as problem:
            raise records.error(index, problem, fmt) from None
        yield from paragraphs


def corpus_from_questions(questions_path: Path | str,
                          fmt: DatasetFormat | str = DatasetFormat.AUTO) -> list[RawDocument]:
    """The corpus of a dataset shipped without one: the questions' own context paragraphs.

    Deduplicated by title, first occurrence first. MuSiQue splits articles into
    paragraphs that share a title; dropping all but one would lose gold passages,
    so a title with several distinct texts keeps each, with ids ``title#1``,
    ``title#2``, … (a unique title keeps no id: it is identified by its title).
    Texts equal the gold-passage convention, so every gold passage is in the corpus.
    """
    records = _load_records(Path(questions_path))
    chosen = _resolve(records, fmt)
    unique: dict[tuple[str, str], _Paragraph] = {}
    for paragraph in _all_paragraphs(records, chosen):
        # An empty paragraph could never be retrieved and would fail ingest validation.
        if paragraph.text.strip():
            unique.setdefault((paragraph.title, paragraph.text), paragraph)
    texts_per_title: dict[str, int] = {}
    for title, _ in unique:
        texts_per_title[title] = texts_per_title.get(title, 0) + 1
    seen_per_title: dict[str, int] = {}
    documents: list[RawDocument] = []
    for paragraph in unique.values():
        doc_id: str | None = None
        if texts_per_title[paragraph.title] > 1:
            seen_per_title[paragraph.title] = seen_per_title.get(paragraph.title, 0) + 1
            doc_id = f"{paragraph.title}#{seen_per_title[paragraph.title]}"
        documents.append(RawDocument(doc_id=doc_id, title=paragraph.title, text=paragraph.text,
                                     metadata={}, origin=paragraph.where))
    return documents
