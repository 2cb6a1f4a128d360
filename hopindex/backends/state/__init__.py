"""State store adapters: catalog, documents, units, entity catalogue and jobs."""

from hopindex.backends.state.sqlite_store import SqliteStateStore

__all__ = ["SqliteStateStore"]
