"""How the Qdrant server adapter reads qdrant-client's failures.

The client reports them per transport: ``UnexpectedResponse`` (an HTTP status) over
REST, ``grpc.RpcError`` over gRPC, ``ResponseHandlingException`` or ``OSError`` when
nothing answered, and in its in-process mode (``location=":memory:"`` or ``path=``)
a ``ValueError`` for a collection it does not hold. Each becomes a hopindex error
naming the index, retryable where a later attempt can succeed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    HopindexError,
)

ENGINE = "qdrant"
_RETRYABLE_STATUS = frozenset({408, 429, 502, 503, 504})
_RETRYABLE_GRPC = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                             grpc.StatusCode.RESOURCE_EXHAUSTED})
_AUTH_GRPC = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


def is_missing(exc: BaseException, collection: str) -> bool:
    """``collection`` (or the point asked for) does not exist."""
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code == 404
    if isinstance(exc, grpc.RpcError):
        return bool(exc.code() == grpc.StatusCode.NOT_FOUND)
    # The in-process mode's own wording; any other ValueError is a real failure.
    return isinstance(exc, ValueError) and str(exc) == f"Collection {collection} not found"


def _reason(exc: UnexpectedResponse) -> str:
    try:
        status = exc.structured().get("status")
        if isinstance(status, dict) and "error" in status:
            return f"{exc.status_code} {status['error']}"
    except ValueError:
        pass
    return f"{exc.status_code} {exc.content[:200]!r}"


@contextmanager
def errors(index: str, action: str) -> Iterator[None]:
    """Client failures as hopindex errors naming the index and what was being done."""
    try:
        yield
    except HopindexError:
        raise
    except UnexpectedResponse as exc:
        message = f"{ENGINE} collection of index {index!r}: {action} failed: {_reason(exc)}"
        if exc.status_code in (401, 403):
            raise ConfigError(f"{message}; check HOPINDEX_QDRANT_API_KEY") from exc
        if exc.status_code in _RETRYABLE_STATUS:
            raise BackendUnavailableError(message) from exc
        raise BackendError(message) from exc
    except grpc.RpcError as exc:
        code = exc.code()
        message = (f"{ENGINE} collection of index {index!r}: {action} failed: "
                   f"{code.name}: {exc.details()}")
        if code in _AUTH_GRPC:
            raise ConfigError(f"{message}; check HOPINDEX_QDRANT_API_KEY") from exc
        if code in _RETRYABLE_GRPC:
            raise BackendUnavailableError(message) from exc
        raise BackendError(message) from exc
    except (ResponseHandlingException, OSError) as exc:
        raise BackendUnavailableError(f"{ENGINE} unreachable while {action} index "
                                      f"{index!r}: {exc}") from exc
