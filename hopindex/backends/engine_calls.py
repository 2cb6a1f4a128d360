"""Engine calls as JSON: what another process sends the owner of the embedded engines,
and how the owner answers.

A request names the engine (``vectors`` or ``keywords``), one method of its protocol
and that method's arguments; the answer holds the method's value, or the error it
raised (its type and message), which the caller raises again as the same type. Vectors
travel as lists of floats: a float32 survives the JSON round trip exactly, so an index
exported through the owner holds the very vectors the engine stores.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from hopindex.backends.protocols import (
    KeywordIndex,
    KeywordRecord,
    UnitFilter,
    UnitPayload,
    Vector,
    VectorRecord,
    VectorStore,
)
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    HopindexError,
    InvalidIndexNameError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.logging import get_logger
from hopindex.core.models import Hit, UnitKind

log = get_logger(__name__)

Request = dict[str, Any]
Answer = dict[str, Any]


class Engine(enum.StrEnum):
    VECTORS = "vectors"
    KEYWORDS = "keywords"
    # Not an engine: asks the owner who it is (readiness checks).
    OWNER = "owner"


class EngineChannel(Protocol):
    """Carries one request to the process that owns the engines and brings its answer
    back; raises ``BackendUnavailableError`` when no owner answers."""

    def send_request(self, request: Request) -> Answer: ...


def request(engine: Engine, op: str, **args: Any) -> Request:
    return {"engine": engine.value, "op": op, "args": args}


# -- values on the wire ------------------------------------------------------------

def filter_out(unit_filter: UnitFilter | None) -> dict[str, list[str]] | None:
    if unit_filter is None:
        return None
    return {"kinds": [k.value for k in unit_filter.kinds],
            "source_doc_ids": list(unit_filter.source_doc_ids),
            "entities": list(unit_filter.entities)}


def filter_in(data: dict[str, list[str]] | None) -> UnitFilter | None:
    if data is None:
        return None
    return UnitFilter(kinds=tuple(UnitKind(k) for k in data["kinds"]),
                      source_doc_ids=tuple(data["source_doc_ids"]),
                      entities=tuple(data["entities"]))


def payload_in(data: dict[str, Any]) -> UnitPayload:
    return UnitPayload(kind=UnitKind(data["kind"]),
                       source_doc_ids=tuple(data["source_doc_ids"]),
                       entities=tuple(data.get("entities") or ()))


def vector_out(vector: Vector) -> Any:
    # tolist keeps the shape, so the owner refuses a wrong one as it would locally.
    return np.asarray(vector, dtype=np.float32).tolist()


def vector_in(data: Any) -> Vector:
    return np.asarray(data, dtype=np.float32)


def vector_record_out(record: VectorRecord) -> dict[str, Any]:
    return {"unit_id": record.unit_id, "vector": vector_out(record.vector),
            "payload": record.payload.as_fields()}


def vector_record_in(data: dict[str, Any]) -> VectorRecord:
    return VectorRecord(unit_id=str(data["unit_id"]), vector=vector_in(data["vector"]),
                        payload=payload_in(data["payload"]))


def keyword_record_out(record: KeywordRecord) -> dict[str, Any]:
    return {"unit_id": record.unit_id, "text": record.text,
            "payload": record.payload.as_fields()}


def keyword_record_in(data: dict[str, Any]) -> KeywordRecord:
    return KeywordRecord(unit_id=str(data["unit_id"]), text=str(data["text"]),
                         payload=payload_in(data["payload"]))


def hits_out(hits: list[Hit]) -> list[list[Any]]:
    return [[hit.unit_id, hit.score] for hit in hits]


def hits_in(data: list[list[Any]]) -> list[Hit]:
    return [Hit(unit_id=str(unit_id), score=float(score)) for unit_id, score in data]


# -- errors on the wire ------------------------------------------------------------

# Raised again by the caller as the most specific of these the owner's error is.
_ERROR_TYPES: dict[str, type[HopindexError]] = {cls.__name__: cls for cls in (
    InvalidIndexNameError, InvalidInputError, NotFoundError, ConfigError,
    BackendUnavailableError, BackendError)}


def error_answer(exc: BaseException) -> Answer:
    names = [cls.__name__ for cls in type(exc).__mro__]
    error: dict[str, Any] = {"types": names, "message": str(exc)}
    if isinstance(exc, InvalidInputError):
        # The message already starts with "where: "; sent apart to rebuild the error.
        error["where"] = exc.where
        error["message"] = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
    return {"error": error}


def value_of(answer: Answer) -> Any:
    """The answer's value, or its error raised again as its own type (or its nearest
    ancestor this side knows; ``BackendError`` for anything else)."""
    error = answer.get("error")
    if error is None:
        return answer.get("value")
    message = str(error.get("message", "the engine owner failed"))
    kind = next((_ERROR_TYPES[name] for name in error.get("types", ()) if name in _ERROR_TYPES),
                BackendError)
    if issubclass(kind, InvalidInputError):
        raise kind(message, where=str(error.get("where", "")))
    raise kind(message)


# -- the owner's side --------------------------------------------------------------

Handler = Callable[[dict[str, Any]], Any]


def _vector_handlers(store: VectorStore) -> dict[str, Handler]:
    return {
        "ensure_index": lambda a: store.ensure_index(a["index"], int(a["dimension"])),
        "upsert_vectors": lambda a: store.upsert_vectors(
            a["index"], [vector_record_in(r) for r in a["records"]]),
        "delete_vectors": lambda a: store.delete_vectors(a["index"], list(a["unit_ids"])),
        "search_vectors": lambda a: hits_out(store.search_vectors(
            a["index"], vector_in(a["vector"]), int(a["k"]), filter_in(a["filter"]))),
        "count_vectors": lambda a: store.count_vectors(a["index"]),
        "get_vectors": lambda a: [vector_record_out(r) for r in
                                  store.get_vectors(a["index"], list(a["unit_ids"]))],
        "drop_index": lambda a: store.drop_index(a["index"]),
    }


def _keyword_handlers(store: KeywordIndex) -> dict[str, Handler]:
    return {
        "ensure_index": lambda a: store.ensure_index(a["index"]),
        "index_units": lambda a: store.index_units(
            a["index"], [keyword_record_in(r) for r in a["records"]]),
        "delete_units": lambda a: store.delete_units(a["index"], list(a["unit_ids"])),
        "search_text": lambda a: hits_out(store.search_text(
            a["index"], str(a["query"]), int(a["k"]), filter_in(a["filter"]))),
        "search_phrase": lambda a: hits_out(store.search_phrase(
            a["index"], str(a["phrase"]), int(a["k"]), filter_in(a["filter"]))),
        "count_units": lambda a: store.count_units(a["index"]),
        "drop_index": lambda a: store.drop_index(a["index"]),
    }


def answer_request(vectors: Callable[[], VectorStore], keywords: Callable[[], KeywordIndex],
                   owner: Callable[[], dict[str, Any]], sent: Request) -> Answer:
    """Run one request on this process's engines; every failure becomes the answer.

    The engines are passed as callables so a request for one opens only that one.
    """
    try:
        engine = Engine(sent["engine"])
        op = str(sent["op"])
        args = sent.get("args") or {}
        if engine is Engine.OWNER:
            return {"value": owner()}
        handlers = (_vector_handlers(vectors()) if engine is Engine.VECTORS
                    else _keyword_handlers(keywords()))
        if op not in handlers:
            raise InvalidInputError(f"no {engine.value} operation {op!r}", where="op")
        return {"value": handlers[op](args)}
    except HopindexError as exc:
        return error_answer(exc)
    except (KeyError, TypeError, ValueError) as exc:
        # A malformed request: a caller of another version, not an engine failure.
        log.warning("engine_request_malformed", error=repr(exc))
        return error_answer(BackendError(f"malformed engine request: {exc!r}"))
    except Exception as exc:  # the engine's own failure types: the caller gets their text
        log.error("engine_request_failed", error=repr(exc))
        return error_answer(BackendError(f"{type(exc).__name__}: {exc}"))


def ids_out(unit_ids: Sequence[str]) -> list[str]:
    return [str(u) for u in unit_ids]
