"""The test LLM's replies to SiReRAG's prompts, from the evidence ``llm_responses`` cuts out.

Propositions: each sentence of the passage, with the capitalised names it contains as
its entities, so that documents naming the same entity share it and the relatedness
tree has structure. Summaries: the first sentence of each text, so that the same
cluster in the same order always gets the same summary.

The paper's three extraction steps, read from the prompt as a model would: the
coreference rewrite (``COREFERENCE_MARKER``) puts a name for a sentence-initial
pronoun (the first name of the paragraph before it, else of the previous paragraph);
the entities (``NAMED_ENTITIES_MARKER``) are the paragraph's capitalised names, keyed
``n1, n2, ...``; the facts (``FACTS_MARKER``) are its sentences, keyed ``f1, f2, ...``,
each with triplets joining the listed entities it mentions. Each figure's example
comes first, so the task's paragraph is the one after the last ``Paragraph:`` line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hopindex.testing.llm_text import capitalised_spans, split_sentences, unique

PROPOSITIONS_KEY = "propositions"  # the wrapper a JSON-mode reply puts the array under
SUMMARY_PREFIX = "Summary: "
MAX_SUMMARY_CHARS = 1_000
COREFERENCE_MARKER = "Rewrite the below paragraph by resolving all entity coreferences"
NAMED_ENTITIES_MARKER = "Extract all named entities from the document"
FACTS_MARKER = "For each fact, also generate all semantic triplets"
_PARAGRAPH = re.compile(r"^Paragraph:", re.MULTILINE)
_PREVIOUS_LABEL = "Previous paragraph from Document:"
_END_LABELS = ("Output:", "Entities:", "Instruction:")
_PRONOUNS = {"He": "", "She": "", "It": "", "They": "",
             "His": "'s", "Her": "'s", "Its": "'s", "Their": "'s"}
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def propositions_reply(passage: str, *, json_mode: bool) -> object:
    """``[{"proposition", "entities"}...]``; under ``"propositions"`` in JSON mode, which,
    as with a real provider, cannot return a bare array."""
    propositions = [{"proposition": sentence, "entities": unique(capitalised_spans(sentence))}
                    for sentence in split_sentences(passage)]
    return {PROPOSITIONS_KEY: propositions} if json_mode else propositions


def summary_reply(texts: Sequence[str]) -> str:
    """``Summary:`` and the first sentence of each text, at most ``MAX_SUMMARY_CHARS``.

    A text that is itself a summary loses its prefix first, so that summaries of
    summaries do not stack prefixes.
    """
    firsts: list[str] = []
    for text in texts:
        sentences = split_sentences(text.strip().removeprefix(SUMMARY_PREFIX))
        if sentences:
            firsts.append(sentences[0])
    summary = SUMMARY_PREFIX + " ".join(unique(firsts))
    if len(summary) <= MAX_SUMMARY_CHARS:
        return summary.strip()
    return summary[:MAX_SUMMARY_CHARS].rsplit(" ", 1)[0]


def coreference_reply(prompt: str) -> str:
    """The task's paragraph, each sentence-initial pronoun replaced by the name it most
    plausibly stands for: the paragraph's first name before it, else the previous
    paragraph's first name; with neither, the pronoun stays."""
    previous = _labelled(prompt, prompt.rfind(_PREVIOUS_LABEL), len(_PREVIOUS_LABEL))
    fallback = next(iter(capitalised_spans(previous)), "")
    subject = ""
    lines: list[str] = []
    for line in _task_paragraph(prompt).splitlines():
        sentences: list[str] = []
        for written in _SENTENCE_BREAK.split(line.strip()):
            first, _, rest = written.partition(" ")
            name = subject or fallback
            resolved = (f"{name}{_PRONOUNS[first]} {rest}"
                        if first in _PRONOUNS and name and rest else written)
            subject = subject or next(iter(capitalised_spans(resolved)), "")
            sentences.append(resolved)
        lines.append(" ".join(s for s in sentences if s))
    return "\n".join(lines).strip()


def named_entities_reply(prompt: str, *, json_mode: bool) -> object:
    """Fig. 7's object: the paragraph's capitalised names, ``n1, n2, ...`` in order."""
    names = unique(capitalised_spans(_task_paragraph(prompt)))
    return {f"n{number}": {"name": name, "type": "Named entity"}
            for number, name in enumerate(names, start=1)}


def facts_reply(prompt: str, *, json_mode: bool) -> object:
    """Fig. 8's object: one fact per sentence of the paragraph, ``f1, f2, ...``, with a
    triplet from its first listed entity to each other listed entity it mentions (to
    the rest of the sentence when it mentions one); a sentence naming none has none."""
    listed = [name.strip() for name in _entities_line(prompt).split(",") if name.strip()]
    facts: dict[str, object] = {}
    for number, sentence in enumerate(split_sentences(_task_paragraph(prompt)), start=1):
        named = [name for name in listed if name.lower() in sentence.lower()]
        if len(named) > 1:
            triplets = [[named[0], "is mentioned with", other] for other in named[1:]]
        elif named:
            triplets = [[named[0], "is described as", sentence]]
        else:
            triplets = []
        facts[f"f{number}"] = {"fact": sentence, "triplets": triplets}
    return facts


def _task_paragraph(prompt: str) -> str:
    """The text after the last line starting ``Paragraph:``, up to the next label."""
    starts = [m.end() for m in _PARAGRAPH.finditer(prompt)]
    return _labelled(prompt, starts[-1] if starts else -1, 0)


def _entities_line(prompt: str) -> str:
    start = prompt.rfind("\nEntities:")
    return prompt[start + len("\nEntities:"):].split("\n", 1)[0] if start >= 0 else ""


def _labelled(prompt: str, start: int, label_length: int) -> str:
    """The text from ``start`` (past a label of ``label_length``) up to the next line
    that starts with one of the prompts' labels; empty when ``start`` is -1."""
    if start < 0:
        return ""
    kept: list[str] = []
    for line in prompt[start + label_length:].splitlines():
        if line.lstrip().startswith(_END_LABELS):
            break
        kept.append(line)
    return "\n".join(kept).strip()
