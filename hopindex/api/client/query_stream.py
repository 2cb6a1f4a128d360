"""A streamed query's events, alike through every door (SDK, HTTP, CLI).

In order: ``passages`` (the retrieval result with provenance, as soon as the method has
it), ``answer.delta`` (the answer's text as the model writes it; none from a method
without an answer), ``usage``, then ``done``, or ``degraded`` when a step degraded:
both carry the whole result, whose ``answer`` is the one that stands. It can differ from
the deltas put together: trimmed, with ``answer=cited`` markers renumbered to passage
ranks, or null when the answer call failed part way (text already shown is to be
withdrawn). A query that fails raises its error instead: before the first event, as an
unstreamed query would; after it, from the iterator (an ``error`` event over HTTP).

``Client.query(..., stream=True)`` returns a ``QueryStream``: iterate it; close it (or
leave its ``with`` block) to stop the query's answer call. Locally, ``QueryEvents`` runs
the query on a thread of its own and hands its events on through a queue; remotely, the
HTTP stream is read as it comes, and closing it ends the connection, which the server
takes as the reader gone.
"""

from __future__ import annotations

import contextvars
import enum
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from pydantic import BaseModel, ConfigDict

from hopindex.api.client.wire import PassageView, QueryResultView, QueryUsageView
from hopindex.methods.base import QueryResult, QueryUsage, RankedPassage, passage_dict


class QueryEventType(enum.StrEnum):
    PASSAGES = "passages"
    ANSWER_DELTA = "answer.delta"
    USAGE = "usage"
    DONE = "done"
    DEGRADED = "degraded"


class PassagesEventView(BaseModel):
    """The data of a ``passages`` event."""

    model_config = ConfigDict(extra="ignore")
    passages: list[PassageView]


class AnswerDeltaView(BaseModel):
    """The data of an ``answer.delta`` event: the next piece of the answer's text."""

    model_config = ConfigDict(extra="ignore")
    text: str


@dataclass(frozen=True, slots=True)
class QueryEvent:
    """One event: ``passages`` holds the passages, ``answer.delta`` its ``text``,
    ``usage`` the ``usage``, ``done`` and ``degraded`` the whole ``result``."""

    type: QueryEventType
    passages: tuple[RankedPassage, ...] = ()
    text: str = ""
    usage: QueryUsage | None = None
    result: QueryResult | None = None

    def as_dict(self) -> dict[str, Any]:
        """The event's data as the HTTP stream sends it."""
        if self.type is QueryEventType.PASSAGES:
            return {"passages": [passage_dict(p) for p in self.passages]}
        if self.type is QueryEventType.ANSWER_DELTA:
            return {"text": self.text}
        if self.type is QueryEventType.USAGE:
            return (self.usage or QueryUsage()).as_dict()
        if self.result is None:
            raise ValueError(f"a {self.type.value} event carries its result")
        return self.result.as_dict()

    @classmethod
    def from_dict(cls, kind: str, data: dict[str, Any]) -> QueryEvent:
        """The event an HTTP stream sent (``as_dict``'s reverse)."""
        event_type = QueryEventType(kind)
        if event_type is QueryEventType.PASSAGES:
            passages = PassagesEventView.model_validate(data).passages
            return cls(event_type, passages=tuple(p.to_runtime() for p in passages))
        if event_type is QueryEventType.ANSWER_DELTA:
            return cls(event_type, text=AnswerDeltaView.model_validate(data).text)
        if event_type is QueryEventType.USAGE:
            return cls(event_type, usage=QueryUsageView.model_validate(data).to_runtime())
        return cls(event_type, result=QueryResultView.model_validate(data).to_runtime())


def closing_events(result: QueryResult) -> list[QueryEvent]:
    """``usage``, then ``done`` or ``degraded``: what follows the method's own events."""
    last = QueryEventType.DEGRADED if result.degraded else QueryEventType.DONE
    return [QueryEvent(QueryEventType.USAGE, usage=result.usage),
            QueryEvent(last, result=result)]


class StreamListener:
    """The method's listener (``methods.base.AnswerListener``) that publishes events."""

    def __init__(self, publish: Callable[[QueryEvent], None]) -> None:
        self._publish = publish
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> threading.Event:
        return self._cancelled

    def put_passages(self, passages: Sequence[RankedPassage]) -> None:
        self._publish(QueryEvent(QueryEventType.PASSAGES, passages=tuple(passages)))

    def put_delta(self, text: str) -> None:
        if text:
            self._publish(QueryEvent(QueryEventType.ANSWER_DELTA, text=text))


class QueryStream(Protocol):
    """A streamed query's events, in order; ``close`` stops it: the answer call ends,
    and so does the iteration."""

    def __iter__(self) -> Iterator[QueryEvent]: ...

    def __next__(self) -> QueryEvent: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


_END = object()

StreamedQuery = Callable[[StreamListener], QueryResult]


class QueryEvents:
    """The events of one query run on a thread of its own (a ``QueryStream``); the
    query's error, if any, is raised where the event would have been read."""

    def __init__(self, run: StreamedQuery) -> None:
        self._queue: queue.Queue[QueryEvent | _Failed | object] = queue.Queue()
        self._listener = StreamListener(self._queue.put)
        self._ended = False
        # The caller's log context (a request id) goes with the query.
        self._thread = threading.Thread(target=contextvars.copy_context().run,
                                        args=(self._run, run), daemon=True,
                                        name="hopindex-query-stream")
        self._thread.start()

    def _run(self, run: StreamedQuery) -> None:
        try:
            result = run(self._listener)
        except BaseException as exc:  # handed to the reader, raised there
            self._queue.put(_Failed(exc))
        else:
            for event in closing_events(result):
                self._queue.put(event)
        self._queue.put(_END)

    def close(self) -> None:
        """Stop: the answer call is cancelled, later events are dropped."""
        self._listener.cancelled.set()
        self._ended = True

    def __iter__(self) -> Iterator[QueryEvent]:
        return self

    def __next__(self) -> QueryEvent:
        if self._ended:
            raise StopIteration
        item = self._queue.get()
        if isinstance(item, QueryEvent) and not self._ended:
            return item
        if isinstance(item, _Failed) and not self._ended:
            self._ended = True
            raise item.error
        self._ended = True
        raise StopIteration

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
