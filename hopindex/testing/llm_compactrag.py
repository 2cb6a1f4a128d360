"""The test LLM's replies to CompactRAG's prompts: QA extraction, decomposition, synthesis.

``llm_responses`` classifies a prompt by the markers below and calls these with the
whole prompt. Replies keep CompactRAG's rules so that its parsers keep them too:

- QA extraction: one pair per sentence of the passage. The question asks about the
  sentence's first capitalised name not asked about before (else its first content
  words) in at most twelve words, never leading with a pronoun; the answer, a verbatim
  span, is the sentence's last other name, else its last three words.
- Decomposition: a question naming two capitalised names gets one sub-question about
  each, neither ref'ing the other (a comparison's halves); one joining two parts with
  "and" or "of the" gets two, the second ref'ing the first (about the first name or
  the joined part, then the question itself); any other question is its own one
  sub-question.
- Synthesis, from the last sub-question: ``yes`` to a yes/no question, else its
  extracted answer, else the most frequent capitalised name in its retrieved answers
  that neither question contains, else its first retrieved answer.
"""

from __future__ import annotations

import re
from collections import Counter

from hopindex.testing.llm_text import NOT_NAME_WORDS, capitalised_spans, split_sentences, unique

QA_MARKER = "[Entity List]:"  # the label after the passage, also in the prompt's example
ORIGINAL_TEXT_LABEL = "[Original Text]:"
DECOMPOSE_MARKER = '"ref"'
DECOMPOSE_LABEL = "Now, the multi-hop question is:"
SYNTHESIZE_MARKER = '"thought"'
SYNTHESIZE_LABEL = "Now, it is your turn."
QUESTION_LABEL = "Multi-hop question:"
EXTRACTED_LABEL = "Extracted answer:"
KNOWLEDGE_LABEL = "Retrieved knowledge:"
NOTHING = "(none)"
UNKNOWN_ANSWER = "unknown"
# The wrappers a JSON-mode reply puts its array under, as a real provider must.
QA_KEY = "qa"
SUB_QUESTIONS_KEY = "sub_questions"
QUESTION_TEMPLATE = "What does the text state about {subject}?"  # six words and the subject
MAX_SUBJECT_WORDS = 6
TAIL_WORDS = 3

_WORD = re.compile(r"\w+")
# Pronouns NOT_NAME_WORDS leaves out: a question about them would name nothing.
_MORE_PRONOUNS = frozenset({"him", "them", "hers", "theirs", "us", "me"})
_JOINERS = (" of the ", " and ")
_SUB_QUESTION_HEADER = re.compile(r"^Sub-question \d+:", re.MULTILINE)
_YES_NO_START = re.compile(
    r"^(?:is|are|was|were|did|do|does|can|could|has|have|had|will|would)\b", re.IGNORECASE)


# --- QA extraction ---------------------------------------------------------------------


def qa_reply(prompt: str, *, json_mode: bool) -> object:
    """``[{"question", "answer"}...]`` for the passage; under ``"qa"`` in JSON mode."""
    pairs: list[dict[str, str]] = []
    asked: set[str] = set()
    for sentence in split_sentences(qa_passage(prompt)):
        pair = _pair_for(sentence, asked)
        if pair is not None:
            asked.add(pair["question"])
            pairs.append(pair)
    return {QA_KEY: pairs} if json_mode else pairs


def qa_passage(prompt: str) -> str:
    """The text between the last ``[Original Text]:`` and the ``[Entity List]:`` after it."""
    start = prompt.rfind(ORIGINAL_TEXT_LABEL)
    body = prompt[start + len(ORIGINAL_TEXT_LABEL):] if start >= 0 else prompt
    end = body.find(QA_MARKER)
    return (body[:end] if end >= 0 else body).strip()


def _pair_for(sentence: str, asked: set[str]) -> dict[str, str] | None:
    """About the first name not asked about yet (then the first content words), so that
    sentences about one subject do not repeat a question; None when all are taken."""
    names = unique(capitalised_spans(sentence))
    subjects = [*names, " ".join(_content_words(sentence)[:TAIL_WORDS])]
    for subject in (s for s in subjects if s):
        question = QUESTION_TEMPLATE.format(subject=" ".join(subject.split()[:MAX_SUBJECT_WORDS]))
        if question in asked:
            continue
        others = [name for name in names if name.lower() not in subject.lower()]
        return {"question": question, "answer": others[-1] if others else _tail(sentence)}
    return None


def _tail(sentence: str) -> str:
    """The sentence's last words, without the closing punctuation: still a substring."""
    return " ".join(sentence.rstrip(".!?\"'”’ ").split()[-TAIL_WORDS:])  # noqa: RUF001


# --- decomposition ---------------------------------------------------------------------


def decompose_reply(prompt: str, *, json_mode: bool) -> object:
    """``[{"index", "q", "ref"}...]``; under ``"sub_questions"`` in JSON mode."""
    question = _after_last(prompt, DECOMPOSE_LABEL)
    items = [{"index": n, "q": q, "ref": ref}
             for n, (q, ref) in enumerate(_sub_questions(question), start=1)]
    return {SUB_QUESTIONS_KEY: items} if json_mode else items


def _sub_questions(question: str) -> list[tuple[str, int | None]]:
    names = _names(question)
    if len(names) >= 2:
        # The halves of a comparison wait for no answer: neither refers to the other.
        return [(_about(names[0]), None), (_about(names[1]), None)]
    joined = next((question.split(j, 1)[1] for j in _JOINERS if j in question), "")
    if joined:
        part = names[0] if names else joined.rstrip("?.! ")
        return [(_about(part), None), (question, 1)]
    return [(question, None)]


def _names(question: str) -> list[str]:
    """The question's names, "A and B" as two, without the question's opening "Were"."""
    parts = [part for span in capitalised_spans(question) for part in span.split(" and ")]
    opening = question.lstrip()
    return unique([" ".join(p.split()[1:]) if opening.startswith(p) and _YES_NO_START.match(p)
                   else p for p in parts])


def _about(subject: str) -> str:
    return QUESTION_TEMPLATE.format(subject=subject)


# --- synthesis -------------------------------------------------------------------------


def synthesize_reply(prompt: str, *, json_mode: bool = False) -> dict[str, str]:
    """``{"thought", "answer"}``, an object in JSON mode or not (``json_mode`` is taken
    for a uniform call only): an extractive guess from the last sub-question of the
    evidence after the last ``Now, it is your turn.`` (the prompt's example is before)."""
    del json_mode
    evidence = _after_last(prompt, SYNTHESIZE_LABEL, one_line=False)
    question = _line_after(evidence, QUESTION_LABEL)
    steps = _SUB_QUESTION_HEADER.split(evidence)[1:]
    last = steps[-1] if steps else ""
    extracted = _line_after(last, EXTRACTED_LABEL)
    answers = _knowledge_answers(last)
    asked = f"{question} {last.split(chr(10), 1)[0]}".lower()
    names = [n for n in capitalised_spans("\n".join(answers)) if n.lower() not in asked]
    if _YES_NO_START.match(question):
        answer = "yes"
    elif extracted and extracted != NOTHING:
        answer = extracted
    elif names:
        counts = Counter(names)
        answer = max(names, key=lambda name: (counts[name], -names.index(name)))
    else:
        answer = answers[0] if answers else UNKNOWN_ANSWER
    return {"thought": f"The retrieved knowledge points to {answer}.", "answer": answer}


def _knowledge_answers(step: str) -> list[str]:
    """The answer lines of a step's retrieved pairs (each pair: question line, answer)."""
    start = step.find(KNOWLEDGE_LABEL)
    if start < 0:
        return []
    blocks = re.split(r"\n\s*\n", step[start + len(KNOWLEDGE_LABEL):].strip())
    return [" ".join(block.splitlines()[1:]).strip() for block in blocks
            if len(block.splitlines()) > 1]


# --- helpers ---------------------------------------------------------------------------


def _after_last(prompt: str, label: str, *, one_line: bool = True) -> str:
    start = prompt.rfind(label)
    rest = prompt[start + len(label):] if start >= 0 else prompt
    return " ".join(rest.split()) if one_line else rest.strip()


def _line_after(text: str, label: str) -> str:
    start = text.find(label)
    return text[start + len(label):].split("\n", 1)[0].strip() if start >= 0 else ""


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text)
            if w.lower() not in NOT_NAME_WORDS and w.lower() not in _MORE_PRONOUNS]
