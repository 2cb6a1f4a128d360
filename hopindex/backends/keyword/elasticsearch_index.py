"""``KeywordIndex`` on an Elasticsearch cluster: BM25 over unit texts, for scale-out.

``elasticsearch://[user:password@]host[:port][,host2:port...]`` (http) or
``elasticsearch+https://…`` (TLS). One alias and index per hopindex index, the
mappings and queries of ``elasticsearch_requests`` (the tantivy twin's analysis,
so the two answer alike). The official async client runs on the adapter's own
loop thread, which keeps the protocol synchronous for Celery tasks and queries.
Writes use the bulk helper and report each failing unit with its reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from elasticsearch import (
    ApiError,
    AsyncElasticsearch,
    AuthenticationException,
    AuthorizationException,
    BadRequestError,
    TransportError,
)
from elasticsearch import NotFoundError as EsNotFoundError
from elasticsearch.helpers import async_streaming_bulk

from hopindex.backends.keyword import elasticsearch_requests as req
from hopindex.backends.loop_thread import ClientOnLoop
from hopindex.backends.protocols import KeywordRecord, UnitFilter
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    HopindexError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger
from hopindex.core.models import Hit
from hopindex.core.settings import RefreshPolicy, Settings

log = get_logger(__name__)

T = TypeVar("T")

ENGINE = "elasticsearch"
SCHEMES = {"elasticsearch": "http", "elasticsearch+https": "https"}
DEFAULT_PORT = 9200
# Actions per bulk request: ~500 units of a few KB stay far below the 100 MB cap.
BULK_CHUNK = 500
BULK_RETRIES_ON_429 = 3
# Statuses worth retrying later (overloaded or restarting cluster).
_RETRYABLE_STATUS = frozenset({408, 429, 502, 503, 504})
# Failing units named in an error message; the rest are counted.
_NAMED_FAILURES = 5


@dataclass(frozen=True, slots=True)
class ElasticsearchConfig:
    """Where the cluster is, how to authenticate, and how indexes are created."""

    hosts: tuple[str, ...]
    index_prefix: str = "hopindex-"
    k1: float = 1.2
    b: float = 0.75
    refresh: RefreshPolicy = RefreshPolicy.WAIT_FOR
    shards: int = 1
    replicas: int = 1
    timeout_s: float = 30.0
    api_key: str = field(default="", repr=False)
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    ca_file: str = ""
    verify_certs: bool = True

    @classmethod
    def from_url(cls, url: str, settings: Settings | None = None) -> ElasticsearchConfig:
        s = settings or Settings()
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES:
            raise ConfigError(f"HOPINDEX_KEYWORD_URL: expected elasticsearch://host:port or "
                              f"elasticsearch+https://host:port, got {url!r}")
        userinfo, _, hostlist = parts.netloc.rpartition("@")
        if not hostlist:
            raise ConfigError(f"HOPINDEX_KEYWORD_URL: no host in {url!r}")
        hosts = tuple(_host_url(SCHEMES[parts.scheme], host, parts.path, url)
                      for host in hostlist.split(","))
        basic_auth: tuple[str, str] | None = None
        if userinfo:
            user, _, password = userinfo.partition(":")
            basic_auth = (unquote(user), unquote(password))
        elif s.es_username:
            basic_auth = (s.es_username, s.es_password)
        if basic_auth and s.es_api_key:
            raise ConfigError("HOPINDEX_KEYWORD_URL names a user and HOPINDEX_ES_API_KEY is "
                              "set: use one way to authenticate")
        if s.es_ca_file and not Path(s.es_ca_file).is_file():
            raise ConfigError(f"HOPINDEX_ES_CA_FILE: no file at {s.es_ca_file!r}")
        return cls(hosts=hosts, index_prefix=s.es_index_prefix, k1=s.es_bm25_k1, b=s.es_bm25_b,
                   refresh=s.es_refresh, shards=s.es_number_of_shards,
                   replicas=s.es_number_of_replicas, timeout_s=s.es_timeout_s,
                   api_key=s.es_api_key, basic_auth=basic_auth, ca_file=s.es_ca_file,
                   verify_certs=s.es_verify_certs)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``AsyncElasticsearch`` (credentials included)."""
        options: dict[str, Any] = {"hosts": list(self.hosts), "request_timeout": self.timeout_s,
                                   "max_retries": 2, "retry_on_timeout": True}
        if self.api_key:
            options["api_key"] = self.api_key
        if self.basic_auth:
            options["basic_auth"] = self.basic_auth
        if any(host.startswith("https://") for host in self.hosts):
            options["verify_certs"] = self.verify_certs
            if self.ca_file:
                options["ca_certs"] = self.ca_file
        return options


def _host_url(scheme: str, host: str, path: str, url: str) -> str:
    name, _, port = host.partition(":")
    if not name or (port and not port.isdigit()):
        raise ConfigError(f"HOPINDEX_KEYWORD_URL: bad host {host!r} in {url!r}")
    return f"{scheme}://{name}:{port or DEFAULT_PORT}{path.rstrip('/')}"


@contextmanager
def _errors(index: str, action: str) -> Iterator[None]:
    """Client failures as hopindex errors naming the index and what was being done."""
    try:
        yield
    except HopindexError:
        raise
    except (AuthenticationException, AuthorizationException) as exc:
        raise ConfigError(f"{ENGINE} refused the credentials ({exc.meta.status}) while "
                          f"{action} index {index!r}: check HOPINDEX_ES_API_KEY or "
                          "HOPINDEX_ES_USERNAME/HOPINDEX_ES_PASSWORD") from exc
    except ApiError as exc:
        message = f"{ENGINE} index {index!r}: {action} failed: {_describe(exc)}"
        if exc.meta.status in _RETRYABLE_STATUS:
            raise BackendUnavailableError(message) from exc
        raise BackendError(message) from exc
    except TransportError as exc:
        raise BackendUnavailableError(f"{ENGINE} unreachable while {action} index "
                                      f"{index!r}: {exc}") from exc


def _describe(exc: ApiError) -> str:
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    if isinstance(error, dict):
        return f"{exc.meta.status} {error.get('type', '')}: {error.get('reason', '')}"
    return f"{exc.meta.status} {exc.message}"


@dataclass(frozen=True, slots=True)
class _ItemFailure:
    unit_id: str
    status: int
    kind: str
    reason: str


def _item_failure(item: dict[str, Any]) -> _ItemFailure:
    (_, result), = item.items()
    error = result.get("error") or {}
    if not isinstance(error, dict):
        error = {"type": "error", "reason": str(error)}
    return _ItemFailure(unit_id=str(result.get("_id")), status=int(result.get("status", 500)),
                        kind=str(error.get("type", "")), reason=str(error.get("reason", "")))


class ElasticsearchKeywordIndex:
    """BM25 keyword search in an Elasticsearch cluster, one alias per hopindex index."""

    def __init__(self, config: ElasticsearchConfig) -> None:
        self.config = config
        self._host = ClientOnLoop("hopindex-elasticsearch",
                                  lambda: AsyncElasticsearch(**config.client_options()))

    @property
    def _client(self) -> AsyncElasticsearch:
        # Read when a coroutine runs, so one started after a reconnect gets the new client.
        return self._host.client

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run on the adapter's loop; after ``close`` the next call connects again."""
        return self._host.run(coroutine, timeout_s)

    # -- lifecycle -----------------------------------------------------------------

    def ensure_index(self, index: str) -> None:
        self._run(self._ensure(validate_index_name(index)), self._wait_s)

    def drop_index(self, index: str) -> None:
        self._run(self._drop(validate_index_name(index)), self._wait_s)

    def close(self) -> None:
        self._host.close()

    # -- writes --------------------------------------------------------------------

    def index_units(self, index: str, records: Sequence[KeywordRecord]) -> None:
        if not records:
            return
        alias = self._alias(index)
        actions = [req.index_action(alias, record) for record in records]
        failures = self._run(self._bulk(index, actions, "index"))
        if failures and all(f.kind == "index_not_found_exception" for f in failures):
            raise NotFoundError(f"keyword index {index!r} does not exist; call ensure_index first")
        if failures:
            raise BackendError(self._failure_message(index, "index", failures, len(records)))
        log.debug("keyword_units_indexed", engine=ENGINE, index=index, count=len(records))

    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None:
        if not unit_ids:
            return
        alias = self._alias(index)
        actions = [req.delete_action(alias, unit_id) for unit_id in dict.fromkeys(unit_ids)]
        # 404 is a unit (or the whole index) that is already gone: the goal is met.
        failures = [f for f in self._run(self._bulk(index, actions, "delete"))
                    if f.status != 404]
        if failures:
            raise BackendError(self._failure_message(index, "delete", failures, len(unit_ids)))
        log.debug("keyword_units_deleted", engine=ENGINE, index=index, count=len(unit_ids))

    def delete_matching(self, index: str, unit_filter: UnitFilter) -> int:
        """Delete every unit the filter selects (delete by query); returns how many.

        Not part of ``KeywordIndex``. An empty filter is refused: it would select every
        unit, and ``drop_index`` says that plainly.
        """
        if unit_filter.is_empty:
            raise InvalidInputError("an empty filter selects every unit; use drop_index",
                                    where="unit_filter")
        return self._run(self._delete_by_query(self._alias(index), index, unit_filter),
                         self._wait_s)

    # -- reads ---------------------------------------------------------------------

    def search_text(self, index: str, query: str, k: int,
                    unit_filter: UnitFilter | None = None) -> list[Hit]:
        if k < 1 or not _has_word(query):
            return []
        return self._run(self._search(index, req.text_query(query, unit_filter), k),
                         self._wait_s)

    def search_phrase(self, index: str, phrase: str, k: int,
                      unit_filter: UnitFilter | None = None) -> list[Hit]:
        if k < 1 or not _has_word(phrase):
            return []
        return self._run(self._search(index, req.phrase_query(phrase, unit_filter), k),
                         self._wait_s)

    def count_units(self, index: str) -> int:
        return self._run(self._count(index), self._wait_s)

    # -- async side ----------------------------------------------------------------

    @property
    def _wait_s(self) -> float:
        # The client retries twice on timeouts; give it room before giving up here.
        return self.config.timeout_s * 4

    def _alias(self, index: str) -> str:
        return req.alias_name(self.config.index_prefix, validate_index_name(index))

    async def _ensure(self, index: str) -> None:
        prefix = self.config.index_prefix
        alias = req.alias_name(prefix, index)
        with _errors(index, "checking"):
            if await self._client.indices.exists_alias(name=alias):
                return
        concrete = req.concrete_name(prefix, index)
        with _errors(index, "creating"):
            try:
                await self._client.indices.create(
                    index=concrete, aliases=req.index_aliases(prefix, index),
                    settings=req.index_settings(k1=self.config.k1, b=self.config.b,
                                                shards=self.config.shards,
                                                replicas=self.config.replicas),
                    mappings=req.index_mappings())
            except BadRequestError as exc:
                # Another process created it between our check and our create.
                if exc.error != "resource_already_exists_exception":
                    raise
                return
        log.info("keyword_index_created", engine=ENGINE, index=index, es_index=concrete)

    async def _drop(self, index: str) -> None:
        alias = req.alias_name(self.config.index_prefix, index)
        with _errors(index, "resolving"):
            try:
                found = await self._client.indices.get_alias(name=alias)
            except EsNotFoundError:
                return
        concrete = sorted(found.body)
        if concrete:
            with _errors(index, "dropping"):
                await self._client.indices.delete(index=",".join(concrete))
            log.info("keyword_index_dropped", engine=ENGINE, index=index, es_indexes=concrete)

    async def _bulk(self, index: str, actions: list[dict[str, Any]],
                    action: str) -> list[_ItemFailure]:
        failures: list[_ItemFailure] = []

        async def stream() -> AsyncIterator[dict[str, Any]]:
            for item in actions:
                yield item

        with _errors(index, f"bulk {action} into"):
            async for ok, item in async_streaming_bulk(
                    self._client, stream(), chunk_size=BULK_CHUNK, raise_on_error=False,
                    yield_ok=False, max_retries=BULK_RETRIES_ON_429, initial_backoff=1.0,
                    max_backoff=10.0, refresh=self.config.refresh.value, require_alias=True):
                if not ok:
                    failures.append(_item_failure(item))
        return failures

    async def _delete_by_query(self, alias: str, index: str, unit_filter: UnitFilter) -> int:
        with _errors(index, "delete by query in"):
            try:
                response = await self._client.delete_by_query(
                    index=alias, query=req.matching_query(unit_filter), conflicts="proceed",
                    refresh=self.config.refresh is not RefreshPolicy.OFF,
                    wait_for_completion=True)
            except EsNotFoundError:
                return 0
        body = response.body
        if body.get("failures"):
            raise BackendError(f"{ENGINE} index {index!r}: delete by query failed for "
                               f"{len(body['failures'])} units: {body['failures'][:3]}")
        deleted = int(body.get("deleted", 0))
        log.info("keyword_units_deleted_by_filter", engine=ENGINE, index=index, count=deleted)
        return deleted

    async def _search(self, index: str, query: dict[str, Any], k: int) -> list[Hit]:
        body = req.search_body(query, k)
        with _errors(index, "searching"):
            try:
                response = await self._client.search(
                    index=self._alias(index), query=body["query"], size=body["size"],
                    source=body["_source"], track_total_hits=body["track_total_hits"])
            except EsNotFoundError:
                return []
        return [Hit(unit_id=str(hit["_id"]), score=float(hit["_score"]))
                for hit in response.body["hits"]["hits"]]

    async def _count(self, index: str) -> int:
        with _errors(index, "counting"):
            try:
                response = await self._client.count(index=self._alias(index))
            except EsNotFoundError:
                return 0
        return int(response.body["count"])

    @staticmethod
    def _failure_message(index: str, action: str, failures: list[_ItemFailure],
                         total: int) -> str:
        named = "; ".join(f"{f.unit_id}: {f.kind}: {f.reason}"
                          for f in failures[:_NAMED_FAILURES])
        more = len(failures) - _NAMED_FAILURES
        return (f"{ENGINE} index {index!r}: {len(failures)} of {total} units failed to "
                f"{action}: {named}" + (f" (and {more} more)" if more > 0 else ""))


def _has_word(text: str) -> bool:
    """Whether the analyser can make any term of ``text``: without one, both engines find
    nothing, so the round trip is skipped."""
    return any(ch.isalnum() for ch in text)
