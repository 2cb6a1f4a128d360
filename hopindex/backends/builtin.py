"""The built-in backends, registered like any plug-in (``plugin.BackendRegistry``).

Each opener imports its adapter when called: a process imports the client library of
the engines it opens, never of the others (a worker with a Redis state store does not
load the SQLite or Qdrant code, and ``hopindex --help`` loads none).
"""

from __future__ import annotations

from hopindex.backends.plugin import BackendRegistry, BackendRole, BackendSpec
from hopindex.backends.protocols import EventLog, KeywordIndex, StateStore, VectorStore
from hopindex.core.settings import REDIS_SCHEMES, Settings, url_path

# Key prefix of state and events on a shared Redis (several services may share one).
STATE_PREFIX = "hopindex"


def _open_qdrant_edge(url: str, settings: Settings) -> VectorStore:
    from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore

    return QdrantEdgeVectorStore(url_path(url))


def _open_qdrant_server(url: str, settings: Settings) -> VectorStore:
    from hopindex.backends.vector.qdrant_server import QdrantServerConfig, QdrantServerVectorStore

    return QdrantServerVectorStore(QdrantServerConfig.from_url(url, settings))


def _open_tantivy(url: str, settings: Settings) -> KeywordIndex:
    from hopindex.backends.keyword.tantivy_index import TantivyKeywordIndex

    return TantivyKeywordIndex(url_path(url))


def _open_elasticsearch(url: str, settings: Settings) -> KeywordIndex:
    from hopindex.backends.keyword.elasticsearch_index import (
        ElasticsearchConfig,
        ElasticsearchKeywordIndex,
    )

    return ElasticsearchKeywordIndex(ElasticsearchConfig.from_url(url, settings))


def _open_sqlite_state(url: str, settings: Settings) -> StateStore:
    from hopindex.backends.state.sqlite_store import SqliteStateStore

    return SqliteStateStore(url_path(url))


def _open_sqlite_events(url: str, settings: Settings) -> EventLog:
    """An SQLite file beside the state file (docs/architecture.md)."""
    from hopindex.backends.events.sqlite_log import SqliteEventLog

    return SqliteEventLog(url_path(url).parent / "events.sqlite3",
                          retention=settings.event_retention)


def _open_redis_state(url: str, settings: Settings) -> StateStore:
    from hopindex.backends.state.redis_store import RedisStateStore

    return RedisStateStore(url, prefix=STATE_PREFIX)


def _open_redis_events(url: str, settings: Settings) -> EventLog:
    """A Redis stream beside the Redis state."""
    from hopindex.backends.events.redis_log import RedisEventLog

    return RedisEventLog(url, prefix=STATE_PREFIX, retention=settings.event_retention)


BUILTIN_BACKENDS = (
    BackendSpec(name="qdrant_edge", role=BackendRole.VECTORS, schemes=("qdrant-edge",),
                opener=_open_qdrant_edge, embedded=True),
    BackendSpec(name="qdrant", role=BackendRole.VECTORS, schemes=("qdrant", "qdrant+https"),
                opener=_open_qdrant_server),
    BackendSpec(name="tantivy", role=BackendRole.KEYWORDS, schemes=("tantivy",),
                opener=_open_tantivy, embedded=True),
    BackendSpec(name="elasticsearch", role=BackendRole.KEYWORDS,
                schemes=("elasticsearch", "elasticsearch+https"), opener=_open_elasticsearch),
    BackendSpec(name="sqlite", role=BackendRole.STATE, schemes=("sqlite",),
                opener=_open_sqlite_state, event_log=_open_sqlite_events),
    BackendSpec(name="redis", role=BackendRole.STATE, schemes=REDIS_SCHEMES,
                opener=_open_redis_state, event_log=_open_redis_events),
)


def register(registry: BackendRegistry) -> None:
    for spec in BUILTIN_BACKENDS:
        registry.add(spec)
