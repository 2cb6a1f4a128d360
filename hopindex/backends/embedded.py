"""What the in-process engines (Qdrant Edge, tantivy) share: folders and error mapping."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hopindex.core.errors import BackendError, HopindexError
from hopindex.core.ids import validate_index_name


def index_folder(root: Path, index: str) -> Path:
    # Index names become folder names: the name check keeps them inside root.
    return root / validate_index_name(index)


@contextmanager
def engine_errors(engine: str, index: str, action: str) -> Iterator[None]:
    """Re-raise engine failures as ``BackendError`` naming the engine, index and action."""
    try:
        yield
    except HopindexError:
        raise
    except BaseException as exc:
        # pyo3 turns a Rust panic into PanicException, a BaseException subclass; it is an
        # engine failure like any other and must not take the process down. Other
        # BaseExceptions (KeyboardInterrupt, SystemExit, cancellation) pass through.
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise
        raise BackendError(f"{engine} index {index!r}: {action} failed: {exc}") from exc
