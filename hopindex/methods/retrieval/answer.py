"""The answer call over selected units: IndexRAG's answer prompt (its Fig. 7), which
``indexrag`` and ``ircot`` share."""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.llm.chat import ChatRequest

ANSWER = "answer"
ANSWER_MAX_TOKENS = 50

ANSWER_SYSTEM = (
    "You are a precise question answering assistant. Answer with ONLY the exact "
    "information requested, with no explanations or extra words. If the answer is a "
    "name, give only the name. If the answer is a number, give only the number. If the "
    "answer is yes/no, give only yes or no."
)


def answer_request(question: str, contexts: Sequence[str]) -> ChatRequest:
    """Fig. 7 over the selected units' texts; a short answer, deterministic."""
    context = "\n\n".join(c.strip() for c in contexts if c.strip())
    # A newline inside the question would break the prompt's two-line structure.
    asked = " ".join(question.split())
    user = f"Context: {context}\nQuestion: {asked}"
    return ChatRequest(stage=ANSWER, messages=(("system", ANSWER_SYSTEM), ("user", user)),
                       temperature=0.0, max_tokens=ANSWER_MAX_TOKENS)


