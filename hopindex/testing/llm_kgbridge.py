"""The test LLM's replies to the partitioned-KG prompts (``kgbridge``).

``llm_responses`` classifies a prompt by the markers below and calls these with the
whole prompt. Replies have the shapes the method's parsers require:

- Extraction: the capitalised names of each sentence of the passage as entities (type
  ``entity``, described by the sentences naming them), and a ``related to`` triple
  between every two names that share a sentence.
- Gleaning: what that first reading misses, the passage's double-quoted phrases (a
  work, a term) not listed already, described and related the same way to the listed
  names sharing their sentence; empty lists when there is none.
- Entity summaries: each entity's summary is the first sentence of its description.
- Document summary: the first sentence of each entity summary, capped; for a document
  with no entity, the first sentence of its opening.
- Adjudication: ``same: true, score 9`` when the two entity summaries share a content
  word beyond the name itself, else ``same: false, score 2``: two people of one name
  with unrelated descriptions are told apart, one entity described twice is not.
- Query plan: primary, the routed document whose title and summary share the most
  content words with the question, and the next one when it shares any; auxiliary,
  the first other document one of whose core entities the question names, with those
  names. A question holding ``UNROUTED_PLAN_MARKER`` gets a plan naming only documents
  that were not routed.
- Sufficiency: sufficient when the context names one of the question's capitalised
  names and holds the text of at least two documents; else not. The sub-question is
  about the first question name the context lacks; else about the next hop, the first
  name reached from the question's names through the context's sentences (a name
  sharing a sentence with a reached one) that only one document of the context
  mentions, the findings being the sentence that leads to it; else about the first
  question name. A question holding ``NEVER_SUFFICIENT_MARKER`` is never sufficient.

The JSON replies are objects, so they are the same in JSON mode and out of it
(``json_mode`` is taken for the dispatcher's sake).
"""

from __future__ import annotations

import itertools
import re

from hopindex.testing.llm_text import NOT_NAME_WORDS, capitalised_spans, split_sentences, unique

EXTRACT_MARKER = '"relations"'
GLEAN_MARKER = "entities the first reading missed"
LISTED_LABEL = "Entities already listed:"
SUMMARIES_MARKER = '"summaries"'
DOC_SUMMARY_MARKER = "Write the summary of the document"
ADJUDICATE_MARKER = '"same"'
PLAN_MARKER = '"primary"'
SUFFICIENCY_MARKER = '"sufficient"'
# Knobs a test puts in its question, which every query prompt carries.
NEVER_SUFFICIENT_MARKER = "zq-never-sufficient"
UNROUTED_PLAN_MARKER = "zq-unrouted-plan"
UNROUTED_DOC_ID = "zq-no-such-document"
PASSAGE_LABEL = "Passage:"
ENTITY_SUMMARIES_LABEL = "Entity summaries:"
CONTEXT_LABEL = "Context:"
OPENING_LABEL = "Opening of the document:"
ENTITY_TYPE = "entity"
RELATION = "related to"
SAME_SCORE = 9
DIFFERENT_SCORE = 2
MAX_DOC_SUMMARY_CHARS = 600
_END_PREFIX = "Return "  # the closing instruction after every block of evidence

_ENTITY_BLOCK = re.compile(r"^## Entity:[ \t]*(.*)$", re.MULTILINE)
_DESCRIPTION_LINE = re.compile(r"^Description:[ \t]*(.*)$", re.MULTILINE)
_SIDE_LINE = re.compile(r"^Entity ([AB]):[ \t]*(.*)$", re.MULTILINE)
_SUMMARY_LINE = re.compile(r"^Summary:[ \t]*(.*)$", re.MULTILINE)
_WORD = re.compile(r"\w+")
_QUESTION_VERBS = frozenset({"is", "are", "was", "were", "did", "do", "does", "has", "have",
                             "had", "can", "could", "will", "would"})
_QUESTION_LINE = re.compile(r"^Question:[ \t]*(.*)$", re.MULTILINE)
_DOCUMENT_BLOCK = re.compile(r"^## Document:[ \t]*(.*)$", re.MULTILINE)
_CONTEXT_LINE = re.compile(r"^\[([^\]|]+?) \| \w+\] (.*)$")
_QUOTED = re.compile(r'"([^"\n]{2,80})"|“([^”\n]{2,80})”')
# Words four letters or longer that say nothing about which entity is meant.
_STOP_WORDS = frozenset({"also", "been", "from", "have", "into", "that", "their", "them",
                         "then", "there", "these", "they", "this", "those", "were", "what",
                         "when", "where", "which", "while", "with", "entity", "about"})


def extract_reply(prompt: str, *, json_mode: bool = True) -> dict[str, object]:
    """``{"entities": [...], "relations": [...]}`` for the passage after ``Passage:``."""
    descriptions: dict[str, list[str]] = {}
    relations: list[dict[str, str]] = []
    for sentence in split_sentences(_evidence_after(prompt, PASSAGE_LABEL)):
        names = unique(capitalised_spans(sentence))
        for name in names:
            descriptions.setdefault(name, []).append(sentence)
        relations.extend({"source": a, "relation": RELATION, "target": b}
                         for a, b in itertools.combinations(names, 2))
    return {"entities": [{"name": name, "type": ENTITY_TYPE, "description": " ".join(found)}
                         for name, found in descriptions.items()],
            "relations": relations}


def glean_reply(prompt: str, *, json_mode: bool = True) -> dict[str, object]:
    """``{"entities": [...], "relations": [...]}``: the passage's quoted phrases that the
    names listed before it lack."""
    listed_block = _evidence_after(prompt, LISTED_LABEL).split(PASSAGE_LABEL, 1)[0]
    listed = {line.strip().removeprefix("- ").casefold() for line in listed_block.splitlines()
              if line.strip().startswith("- ")}
    descriptions: dict[str, list[str]] = {}
    relations: list[dict[str, str]] = []
    for sentence in split_sentences(_evidence_after(prompt, PASSAGE_LABEL)):
        quoted = unique([a or b for a, b in _QUOTED.findall(sentence)])
        found = [q.strip() for q in quoted if q.strip().casefold() not in listed]
        names = [n for n in unique(capitalised_spans(sentence)) if n.casefold() in listed]
        for term in found:
            descriptions.setdefault(term, []).append(sentence)
            relations.extend({"source": name, "relation": RELATION, "target": term}
                             for name in names)
    return {"entities": [{"name": name, "type": ENTITY_TYPE, "description": " ".join(found)}
                         for name, found in descriptions.items()],
            "relations": relations}


def summaries_reply(prompt: str, *, json_mode: bool = True) -> dict[str, object]:
    """``{"summaries": {name: first sentence of its description}}``."""
    summaries: dict[str, str] = {}
    headers = list(_ENTITY_BLOCK.finditer(prompt))
    for position, header in enumerate(headers):
        end = headers[position + 1].start() if position + 1 < len(headers) else len(prompt)
        described = _DESCRIPTION_LINE.search(prompt, header.end(), end)
        sentences = split_sentences(described.group(1)) if described else []
        summaries[header.group(1).strip()] = sentences[0] if sentences else ""
    return {"summaries": summaries}


def doc_summary_reply(prompt: str) -> str:
    """The first sentence of each entity summary listed, capped; else of the opening."""
    if ENTITY_SUMMARIES_LABEL in prompt:
        lines = _evidence_after(prompt, ENTITY_SUMMARIES_LABEL).splitlines()
        texts = [line.strip().removeprefix("- ").split("): ", 1)[-1] for line in lines
                 if line.strip().startswith("- ")]
    else:
        texts = [_evidence_after(prompt, OPENING_LABEL)]
    firsts = unique([found[0] for found in map(split_sentences, texts) if found])
    summary = " ".join(firsts) or "A document without named entities."
    if len(summary) <= MAX_DOC_SUMMARY_CHARS:
        return summary
    return summary[:MAX_DOC_SUMMARY_CHARS].rsplit(" ", 1)[0]


def adjudicate_reply(prompt: str, *, json_mode: bool = True) -> dict[str, object]:
    """Same entity when the two summaries share a content word beyond the name."""
    names = [match.group(2).strip() for match in _SIDE_LINE.finditer(prompt)]
    summaries = [match.group(1) for match in _SUMMARY_LINE.finditer(prompt)]
    name_words = {w for name in names for w in _words(name)}
    words = [set(_content_words(text)) - name_words for text in summaries[:2]]
    shared = sorted(words[0] & words[1]) if len(words) == 2 else []
    if shared:
        return {"same": True, "score": SAME_SCORE,
                "reason": f"both summaries mention {', '.join(shared[:3])}"}
    return {"same": False, "score": DIFFERENT_SCORE,
            "reason": "the summaries share nothing beyond the name"}


def plan_reply(prompt: str, *, json_mode: bool = True) -> dict[str, object]:
    """``{"primary", "auxiliary", "reason"}`` from word overlap with the question."""
    question = _question(prompt)
    if UNROUTED_PLAN_MARKER in prompt:
        return {"primary": [UNROUTED_DOC_ID],
                "auxiliary": [{"doc_id": UNROUTED_DOC_ID, "entities": ["Nobody"]}],
                "reason": "documents that were not offered"}
    asked = set(_content_words(question))
    documents = []
    headers = list(_DOCUMENT_BLOCK.finditer(prompt))
    for position, header in enumerate(headers):
        end = headers[position + 1].start() if position + 1 < len(headers) else len(prompt)
        fields = dict(_field(line) for line in prompt[header.end():end].splitlines()
                      if ": " in line)
        overlap = len(asked & set(_content_words(
            f"{fields.get('Title', '')} {fields.get('Summary', '')}")))
        core = [n.strip() for n in fields.get("Core entities", "").split(";") if n.strip()]
        documents.append((header.group(1).strip(), overlap, core))
    ranked = sorted(documents, key=lambda d: -d[1])  # stable: routing order breaks ties
    primary = ranked[:1] + [d for d in ranked[1:2] if d[1] > 0]
    auxiliary = []
    for doc_id, _, core in ranked[len(primary):]:
        named = [n for n in core if n.lower() in question.lower()]
        if named:
            auxiliary.append({"doc_id": doc_id, "entities": named})
            break
    return {"primary": [d[0] for d in primary], "auxiliary": auxiliary,
            "reason": "the documents sharing the most words with the question"}


def sufficiency_reply(prompt: str, *, json_mode: bool = True) -> dict[str, object]:
    """``{"sufficient", "findings", "sub_question"}``: see the module docstring."""
    question = _question(prompt)
    names = _question_names(question)
    lines = [m for line in _evidence_after(prompt, CONTEXT_LABEL).splitlines()
             if (m := _CONTEXT_LINE.match(line.strip()))]
    context = " ".join(m.group(2) for m in lines).lower()
    present = [n for n in names if n.lower() in context]
    missing = [n for n in names if n not in present]
    documents = {m.group(1) for m in lines}
    sufficient = (NEVER_SUFFICIENT_MARKER not in prompt and bool(present)
                  and len(documents) >= 2)
    found = next((m.group(2) for m in lines
                  if any(n.lower() in m.group(2).lower() for n in present)), "")
    findings = split_sentences(found)[0] if found else ""
    leading, hop = _next_hop(present, [(m.group(1), m.group(2)) for m in lines])
    if hop and not missing:
        findings = leading
    target = (missing or ([hop] if hop else []) or names or [question or "the question"])[0]
    return {"sufficient": sufficient, "findings": findings,
            "sub_question": "" if sufficient else f"What is known about {target}?"}


def _next_hop(start: list[str], lines: list[tuple[str, str]]) -> tuple[str, str]:
    """(the sentence leading to it, the name): the first name reached from ``start``
    through sentences of the context (a name sharing a sentence with a reached one)
    that only one document of the context mentions, so its own is yet to be read;
    empty strings when there is none."""
    sentences = [s for _, text in lines for s in split_sentences(text)]
    reached = list(start)
    known = {n.casefold() for n in start}
    for name in reached:  # grows as names are reached: breadth first
        for sentence in sentences:
            if name.casefold() not in sentence.casefold():
                continue
            for other in unique(capitalised_spans(sentence)):
                key = other.casefold()
                if any(key in k or k in key for k in known):
                    continue  # reached already, or a part of a reached name
                known.add(key)
                reached.append(other)
                if len({doc for doc, text in lines if key in text.casefold()}) == 1:
                    return sentence, other
    return "", ""


def _question_names(question: str) -> list[str]:
    """The question's capitalised spans, less a leading auxiliary verb ("Was Ada ...")."""
    names = []
    for span in capitalised_spans(question):
        words = span.split()
        while words and words[0].lower() in _QUESTION_VERBS:
            words = words[1:]
        names.append(" ".join(words))
    return unique(names)


def _question(prompt: str) -> str:
    match = _QUESTION_LINE.search(prompt)
    return match.group(1).strip() if match else ""


def _field(line: str) -> tuple[str, str]:
    name, _, value = line.partition(": ")
    return name.strip(), value.strip()


def _evidence_after(prompt: str, label: str) -> str:
    """From the first ``label`` to the closing ``Return`` line."""
    start = prompt.find(label)
    body = prompt[start + len(label):] if start >= 0 else prompt
    kept: list[str] = []
    for line in body.splitlines():
        if line.lstrip().startswith(_END_PREFIX):
            break
        kept.append(line)
    return "\n".join(kept).strip()


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _content_words(text: str) -> list[str]:
    return [w for w in _words(text)
            if len(w) >= 4 and w not in NOT_NAME_WORDS and w not in _STOP_WORDS]
