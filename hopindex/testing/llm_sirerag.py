"""The test LLM's replies to SiReRAG's prompts, from the evidence ``llm_responses`` cuts out.

Propositions: each sentence of the passage, with the capitalised names it contains as
its entities, so that documents naming the same entity share it and the relatedness
tree has structure. Summaries: the first sentence of each text, so that the same
cluster in the same order always gets the same summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.testing.llm_text import capitalised_spans, split_sentences, unique

PROPOSITIONS_KEY = "propositions"  # the wrapper a JSON-mode reply puts the array under
SUMMARY_PREFIX = "Summary: "
MAX_SUMMARY_CHARS = 1_000


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
