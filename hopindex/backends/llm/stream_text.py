"""What of a streamed reply is answer text, as it arrives (``streaming.py``).

Only answer text is handed on, and only once it is settled: whatever
``reply_json.answer_text`` would strip never reaches the callback. A reply that opens
with a reasoning block (``<think>`` and its kin, or a harmony-format analysis channel)
is held back until the block ends, and so is a block opened later in the answer;
whitespace is held until text follows it (so none leads the answer or ends it), and so
is a tag still arriving (``<thi``). The pieces join to ``answer_text`` of the whole
reply, which ``complete`` returns for the same request.

One case cannot be known until later: a closing tag whose opening the server stripped
(some vLLM and Ollama templates) makes every word before it reasoning. The pieces
already handed on then stand, no more are (``revised``), and the final answer is
``answer_text`` of the whole reply all the same; the client then reads its provider's
later replies as beginning inside reasoning (``inside_reasoning``), holding their text
until the first closing tag.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hopindex.backends.llm.reply_json import answer_text

OnDelta = Callable[[str], None]

# The reasoning tags ``answer_text`` strips (reply_json.py), and the harmony format's
# markers: the answer is its final channel, up to an end marker.
_TAGS = "think|thinking|reasoning|reflection|thought"
_CLOSED = re.compile(rf"<({_TAGS})>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPENING = re.compile(rf"<({_TAGS})>", re.IGNORECASE)
_CLOSING = re.compile(rf"</(?:{_TAGS})>", re.IGNORECASE)
_HARMONY_FINAL = "<|channel|>final<|message|>"
_HARMONY_ENDS = ("<|return|>", "<|end|>", "<|call|>")
_CLOSINGS = tuple(f"</{tag}>" for tag in _TAGS.split("|"))
_MARKERS = (*(f"<{tag}>" for tag in _TAGS.split("|")), *_CLOSINGS,
            "<|channel|>", "<|start|>", _HARMONY_FINAL, *_HARMONY_ENDS)


def settled_answer(raw: str, *, inside_reasoning: bool = False) -> str:
    """The part of ``answer_text(raw + more)`` that ``raw`` already decides, whatever
    ``more`` is (but for a closing tag with no opening, see the module docstring).
    ``inside_reasoning``: the provider's replies begin inside a reasoning block whose
    opening tag it strips, so nothing is settled before a closing tag."""
    return _settled(raw, inside_reasoning=inside_reasoning).answer


@dataclass(frozen=True, slots=True)
class _Settled:
    """What a reply so far settles, and how its next chunk can be read without reading
    the whole reply again (a reasoning block alone can run to tens of thousands of
    characters, a chunk at a time)."""

    answer: str
    # The answer before its ends are stripped, when nothing in the reply is pending (no
    # harmony channel, no tag arriving or left open): text without a ``<`` extends it.
    clean: str | None = None
    # The closing tags of a block left open: nothing is settled anew before one comes.
    awaiting: tuple[str, ...] = ()


def _settled(raw: str, *, inside_reasoning: bool) -> _Settled:
    harmony = raw.lstrip().startswith("<|")
    final = _harmony_final(raw) if harmony else raw
    if final is None:
        return _Settled("")
    whole = _without_partial_marker(final)
    text = _CLOSED.sub("", whole)
    if (opened := _OPENING.search(text)) is not None:
        text = text[:opened.start()]  # what follows may yet be reasoning
    closings = list(_CLOSING.finditer(text))
    if inside_reasoning and not closings:
        return _Settled("", awaiting=() if harmony else _CLOSINGS)
    awaiting = (f"</{opened.group(1).lower()}>",) if opened and not harmony else ()
    if harmony or len(whole) < len(final) or opened is not None:
        return _Settled(answer_text(text), awaiting=awaiting)
    # A stray closing tag makes everything before it reasoning (``answer_text``).
    return _Settled(answer_text(text), text[closings[-1].end():] if closings else text)


def begins_inside_reasoning(raw: str) -> bool:
    """Whether ``raw`` holds a closing reasoning tag with no opening before it."""
    text = _harmony_final(raw) if raw.lstrip().startswith("<|") else raw
    return text is not None and _CLOSING.search(_CLOSED.sub("", text)) is not None


def _harmony_final(raw: str) -> str | None:
    """The final channel so far of a harmony-format reply (None before it starts)."""
    start = raw.find(_HARMONY_FINAL)
    if start < 0:
        return None
    text = raw[start + len(_HARMONY_FINAL):]
    ends = [found for end in _HARMONY_ENDS if (found := text.find(end)) >= 0]
    return text[:min(ends)] if ends else text


def _without_partial_marker(text: str) -> str:
    """``text`` without a tag or marker that is still arriving at its end."""
    start = text.rfind("<")
    tail = text[start:].lower()
    if start >= 0 and any(len(tail) < len(m) and m.startswith(tail) for m in _MARKERS):
        return text[:start]
    return text


class AnswerEmitter:
    """One attempt's reply as it arrives, its settled answer handed to ``on_delta``."""

    def __init__(self, on_delta: OnDelta, *, inside_reasoning: bool = False) -> None:
        self._on_delta = on_delta
        self._inside_reasoning = inside_reasoning
        self.raw = ""
        self.reasoning_chars = 0
        self.emitted = ""
        # A later part of the reply changed what an earlier one meant: nothing more is
        # handed on, and the final content differs from what was.
        self.revised = False
        # How the next chunk may be read without reading the reply again (``_Settled``).
        self._state = (_Settled("", awaiting=_CLOSINGS) if inside_reasoning
                       else _Settled("", clean=""))
        self._scanned = 0  # where the search for an awaited closing tag goes on

    def feed(self, content: str, reasoning: str = "") -> None:
        self.reasoning_chars += len(reasoning)
        if not content:
            return
        self.raw += content
        state = self._state
        if state.clean is not None and "<" not in content:
            self._state = _Settled((state.clean + content).strip(), state.clean + content)
        elif state.awaiting and not self._arrived(state.awaiting):
            return  # still inside the block: nothing newly settled
        else:
            self._state = _settled(self.raw, inside_reasoning=self._inside_reasoning)
            self._search_on(self._state.awaiting)
        self._emit(self._state.answer)

    def _arrived(self, tags: tuple[str, ...]) -> bool:
        """Whether one of ``tags`` arrived since the last search."""
        window = self.raw[self._scanned:].lower()
        self._search_on(tags)
        return any(tag in window for tag in tags)

    def _search_on(self, tags: tuple[str, ...]) -> None:
        """Start the next search for ``tags`` where one cut in two by the reply's end so
        far would start."""
        longest = max((len(tag) for tag in tags), default=1)
        self._scanned = max(0, len(self.raw) - longest + 1)

    def finish(self) -> str:
        """The whole reply's answer; what was held back of it is handed on now."""
        answer = answer_text(self.raw)
        self._emit(answer)
        return answer

    def _emit(self, settled: str) -> None:
        if self.revised:
            return
        if not settled.startswith(self.emitted):
            self.revised = True
            return
        if delta := settled[len(self.emitted):]:
            self.emitted = settled
            self._on_delta(delta)
