"""A streamed query read from the HTTP API (``Client.connect``): the server's events
as they arrive, an ``error`` event raised as the error the server named. Closing the
stream closes the connection, which the server takes as the reader gone: it stops
the query's answer call."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from hopindex.api.client.http_wire import RemoteUnavailableError, error_from_answer, sse_frames
from hopindex.api.client.query_stream import QueryEvent

EVENT_STREAM_TYPE = "text/event-stream"


class RemoteQueryEvents:
    """A ``QueryStream`` over an open server-sent-events response; ``reword`` turns an
    error the server named back into the client's terms (an option named as the API's
    body names it, ``options.NAME``, as the client's ``params.NAME``)."""

    def __init__(self, response: Any,
                 reword: Callable[[Exception], Exception] = lambda exc: exc) -> None:
        self._response = response
        self._reword = reword
        self._frames = sse_frames(response)
        self._ended = False

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> QueryEvent:
        if self._ended:
            raise StopIteration
        try:
            name, data = next(self._frames)
        except StopIteration:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise RemoteUnavailableError(0, "stream_broken", f"the query's event stream "
                                                             f"broke: {exc}") from None
        if name == "error":
            self.close()
            error = data.get("error") if isinstance(data, dict) else None
            error = error if isinstance(error, dict) else {}
            raise self._reword(error_from_answer(int(error.get("status") or 500), error))
        return QueryEvent.from_dict(name, data)

    def close(self) -> None:
        self._ended = True
        self._response.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
