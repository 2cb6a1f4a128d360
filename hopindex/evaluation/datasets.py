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


def _fail(where: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, where=where)


def _load_records(path: Path) -> list[dict[str, Any]]:
    """A JSON list of records, or JSON Lines (the official MuSiQue files are .jsonl)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise _fail(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(str(path), f"cannot read: {exc}") from None
    records: list[Any]
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        records = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                records.append(_parse_json(line, f"{path}:{lineno}"))
    else:
        loaded = _parse_json(text, str(path))
        if not isinstance(loaded, list):
            raise _fail(str(path), f"expected a JSON list of question records, "
                                   f"got {type(loaded).__name__}")
        records = loaded
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise _fail(f"{path}[{index}]", f"expected a question object, "
                                            f"got {type(record).__name__}")
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


def _has_leading_space_sentences(record: dict[str, Any]) -> bool:
    context = record.get("context")
    if not isinstance(context, list):
        return False
    for pair in context:
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], list):
            later = pair[1][1:]
            if any(isinstance(s, str) and s[:1].isspace() for s in later):
                return True
    return False


def detect_format(records: list[dict[str, Any]], path: Path) -> DatasetFormat:
    """Tell the format from record keys; raise naming the file when nothing fits."""
    if not records:
        return DatasetFormat.HOTPOTQA  # nothing to parse: any format yields no questions
    first = records[0]
    if "paragraphs" in first:
        return DatasetFormat.MUSIQUE
    if not ("context" in first and "supporting_facts" in first):
        raise _fail(f"{path}[0]", f"unknown question format (keys: {sorted(first)}); expected "
                                  "'paragraphs' (MuSiQue) or 'context' and 'supporting_facts' "
                                  "(HotpotQA, 2WikiMultiHopQA)")
    for record in records:
        family = _family(record)
        if family is not None:
            return family
    # Same keys in both: only the sentence spacing tells them apart.
    if any(_has_leading_space_sentences(r) for r in records):
        return DatasetFormat.HOTPOTQA
    raise _fail(str(path), "cannot tell HotpotQA (sentences joined with \"\") from "
                           "2WikiMultiHopQA (joined with \" \"); pass the format explicitly")


def _field(record: dict[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in record:
        raise _fail(where, f"missing field {name!r}")
    value = record[name]
    if not isinstance(value, kind):
        raise _fail(f"{where}:{name}", f"field {name!r} must be {kind.__name__}, "
                                       f"got {type(value).__name__}")
    return value


def _qid(record: dict[str, Any], where: str) -> str:
    for key in ("_id", "id"):
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    raise _fail(where, "missing field '_id' or 'id' (the question id)")


def _context_paragraphs(record: dict[str, Any], fmt: DatasetFormat,
                        where: str) -> list[_Paragraph]:
    """A HotpotQA/2Wiki context ``[[title, [sentences]], ...]`` as paragraphs."""
    context = _field(record, "context", list, where)
    joiner = _SENTENCE_JOIN[fmt]
    paragraphs: list[_Paragraph] = []
    for index, pair in enumerate(context):
        at = f"{where}:context[{index}]"
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], list) and all(isinstance(s, str) for s in pair[1])):
            raise _fail(at, "expected [title, [sentence, ...]]")
        paragraphs.append(_Paragraph(pair[0], joiner.join(pair[1]), at))
    return paragraphs


def _musique_paragraphs(record: dict[str, Any], where: str) -> list[tuple[_Paragraph, bool]]:
    raw = _field(record, "paragraphs", list, where)
    paragraphs: list[tuple[_Paragraph, bool]] = []
    for index, item in enumerate(raw):
        at = f"{where}:paragraphs[{index}]"
        if not isinstance(item, dict):
            raise _fail(at, "expected a paragraph object")
        title = _field(item, "title", str, at)
        text = _field(item, "paragraph_text", str, at)
        paragraphs.append((_Paragraph(title, text, at), bool(item.get("is_supporting"))))
    return paragraphs


def _supporting_titles(record: dict[str, Any], where: str) -> list[str]:
    facts = _field(record, "supporting_facts", list, where)
    titles: list[str] = []
    for index, fact in enumerate(facts):
        if not (isinstance(fact, list) and fact and isinstance(fact[0], str)):
            raise _fail(f"{where}:supporting_facts[{index}]", "expected [title, sentence_index]")
        if fact[0] not in titles:
            titles.append(fact[0])
    return titles


def _unique(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _answers(record: dict[str, Any], where: str) -> tuple[str, ...]:
    answer = _field(record, "answer", str, where)
    aliases = record.get("answer_aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise _fail(f"{where}:answer_aliases", "field 'answer_aliases' must be a list of strings")
    return _unique([answer, *aliases])


def _question(record: dict[str, Any], fmt: DatasetFormat, where: str) -> Question:
    qid = _qid(record, where)
    text = _field(record, "question", str, where)
    answers = _answers(record, where)
    if fmt is DatasetFormat.MUSIQUE:
        paragraphs = _musique_paragraphs(record, where)
        gold = [f"{p.title}\n{p.text}" for p, supporting in paragraphs if supporting]
        hops = qid.split("__", 1)[0] if "__" in qid else "musique"
        kind = hops if record.get("answerable", True) else f"{hops}-unanswerable"
    else:
        by_title: dict[str, str] = {}
        for paragraph in _context_paragraphs(record, fmt, where):
            by_title.setdefault(paragraph.title, paragraph.text)
        gold = []
        for title in _supporting_titles(record, where):
            if title not in by_title:
                raise _fail(f"{where}:supporting_facts",
                            f"supporting title {title!r} is not in the question's context")
            gold.append(f"{title}\n{by_title[title]}")
        kind = str(record.get("type") or "unknown")
    return Question(qid=qid, question=text, answers=answers, gold_passages=_unique(gold),
                    kind=kind)


def _resolve(records: list[dict[str, Any]], path: Path,
             fmt: DatasetFormat | str) -> DatasetFormat:
    try:
        chosen = DatasetFormat(fmt)
    except ValueError:
        accepted = ", ".join(f.value for f in DatasetFormat)
        raise _fail("format", f"unknown dataset format {fmt!r}; accepted: {accepted}") from None
    return detect_format(records, path) if chosen is DatasetFormat.AUTO else chosen


def load_questions(path: Path | str,
                   fmt: DatasetFormat | str = DatasetFormat.AUTO) -> list[Question]:
    """Questions with answers and exact-string gold passages; bad records raise naming
    the file and record index."""
    source = Path(path)
    records = _load_records(source)
    chosen = _resolve(records, source, fmt)
    return [_question(record, chosen, f"{source}[{index}]")
            for index, record in enumerate(records)]


def _all_paragraphs(records: list[dict[str, Any]], fmt: DatasetFormat,
                    path: Path) -> Iterator[_Paragraph]:
    for index, record in enumerate(records):
        where = f"{path}[{index}]"
        if fmt is DatasetFormat.MUSIQUE:
            yield from (p for p, _ in _musique_paragraphs(record, where))
        else:
            yield from _context_paragraphs(record, fmt, where)


def corpus_from_questions(questions_path: Path | str,
                          fmt: DatasetFormat | str = DatasetFormat.AUTO) -> list[RawDocument]:
    """The corpus of a dataset shipped without one: the questions' own context paragraphs.

    Deduplicated by title, first occurrence first. MuSiQue splits articles into
    paragraphs that share a title; dropping all but one would lose gold passages,
    so a title with several distinct texts keeps each, with ids ``title#1``,
    ``title#2``, … (a unique title keeps no id: it is identified by its title).
    Texts equal the gold-passage convention, so every gold passage is in the corpus.
    """
    source = Path(questions_path)
    records = _load_records(source)
    chosen = _resolve(records, source, fmt)
    unique: dict[tuple[str, str], _Paragraph] = {}
    for paragraph in _all_paragraphs(records, chosen, source):
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
