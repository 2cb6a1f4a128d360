"""The test LLM's replies to the partitioned-KG prompts (``kgbridge``).

``llm_responses`` classifies a prompt by the markers below and calls these with the
whole prompt. Replies have the shapes the method's parsers require:

- Extraction: the capitalised names of each sentence of the passage as entities (type
  ``entity``, described by the sentences naming them), and a ``related to`` triple
  between every two names that share a sentence.
- Entity summaries: each entity's summary is the first sentence of its description.
- Document summary: the first sentence of each entity summary, capped; for a document
  with no entity, the first sentence of its opening.
- Adjudication: ``same: true, score 9`` when the two entity summaries share a content
  word beyond the name itself, else ``same: false, score 2``: two people of one name
  with unrelated descriptions are told apart, one entity described twice is not.

The JSON replies are objects, so they are the same in JSON mode and out of it
(``json_mode`` is taken for the dispatcher's sake).
"""

from __future__ import annotations

import itertools
import re

from hopindex.testing.llm_text import NOT_NAME_WORDS, capitalised_spans, split_sentences, unique

EXTRACT_MARKER = '"relations"'
SUMMARIES_MARKER = '"summaries"'
DOC_SUMMARY_MARKER = "Write the summary of the document"
ADJUDICATE_MARKER = '"same"'
PASSAGE_LABEL = "Passage:"
ENTITY_SUMMARIES_LABEL = "Entity summaries:"
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
