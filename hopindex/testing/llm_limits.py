"""The test LLM server's configuration, counters, rate limiter and fault draws."""

from __future__ import annotations

import enum
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hopindex.core.errors import ConfigError
from hopindex.testing.reply_styles import (
    DEFAULT_TRUNCATION_TOKENS,
    ReplyStyle,
    normalised_styles,
)

RATE_WINDOW_S = 60.0  # the provider convention: limits are per minute, over a sliding window


@dataclass(frozen=True, slots=True)
class LlmServerConfig:
    """Every knob of the test server; the defaults answer at once and never fail.

    Fault shares are probabilities per admitted request, drawn from one
    ``random.Random(seed)`` in arrival order, so a sequential client sees the same
    faults on every run. Rate limits of ``None`` mean unlimited.
    """

    host: str = "127.0.0.1"
    port: int = 0  # 0: the OS picks a free port
    model: str = "hopindex-test-llm"
    embedding_model: str = "hopindex-test-embedding"
    api_key: str | None = None  # None: any (or no) bearer token is accepted
    latency_s: float = 0.0
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    fail_429: float = 0.0
    fail_500: float = 0.0
    fail_timeout: float = 0.0
    fail_invalid_json: float = 0.0
    # Every JSON reply to a prompt containing this text is corrupted, repairs included:
    # a document that fails for good while the rest of its job succeeds.
    invalid_json_marker: str = ""
    # Every text (not JSON) reply to a prompt containing this text comes back empty, as
    # a model that produced nothing: a summary that fails for good.
    empty_text_marker: str = ""
    # An injected 429 asks for this pause; short, so retrying clients stay fast in tests.
    fault_retry_after_s: float = 0.05
    # Longer than any client timeout; cancelled when the server stops.
    timeout_hang_s: float = 3600.0
    seed: int = 0
    embedding_dimension: int = 384
    # An outage: the first chat request of this kind (a ``TaskKind`` value such as
    # "stage2") starts a window of ``outage_s`` in which every chat request gets a 503.
    outage_on_kind: str = ""
    outage_s: float = 0.0
    # The forms replies come in (``reply_styles``): each reply draws one from the tuple
    # by a hash of ``seed`` and its messages; empty is bare JSON only. FORMAT_REFUSED and
    # SCHEMA_REFUSED are not drawn: listed, they refuse every request's response_format
    # (any, or json_schema only) with a 400.
    reply_styles: tuple[ReplyStyle, ...] = ()
    # TRUNCATED cuts a reply whose request sets no max_tokens at this many tokens.
    truncated_default_max_tokens: int = DEFAULT_TRUNCATION_TOKENS
    # A streamed reply (``"stream": true``, ``llm_stream``) is sent in batches of this
    # many words, each written this long after the one before: a slow model's pace. An
    # unstreamed reply waits for all its batches, as a provider's whole reply does.
    stream_batch_tokens: int = 4
    stream_batch_latency_s: float = 0.0
    # A stream whose prompt holds this text, and this share of streams (drawn with the
    # other faults), is cut after its first content batch: a provider dying mid-reply.
    stream_break_marker: str = ""
    fail_stream_break: float = 0.0
    # The Batch API (``llm_batches``): the seconds a batch stays in_progress after the
    # read that validated it (0: done on that read); the share of lines, drawn by a hash
    # of ``seed`` and the custom_id, answered with a 500 on their first submission only
    # (sent again, they succeed); and every batch expiring with half its lines done.
    batch_completion_s: float = 0.0
    batch_fail_lines: float = 0.0
    batch_expire: bool = False
    # Only the first this many batches created expire that way (0: as batch_expire
    # says); the later ones, the expired lines sent again among them, complete.
    batch_expire_first: int = 0

    def __post_init__(self) -> None:
        # Strings (from a CLI or a settings file) are taken for the styles they name.
        object.__setattr__(self, "reply_styles", normalised_styles(self.reply_styles))
        if self.truncated_default_max_tokens < 1:
            raise ConfigError("LlmServerConfig.truncated_default_max_tokens must be at least 1, "
                              f"got {self.truncated_default_max_tokens}")
        shares = {"fail_429": self.fail_429, "fail_500": self.fail_500,
                  "fail_timeout": self.fail_timeout, "fail_invalid_json": self.fail_invalid_json,
                  "fail_stream_break": self.fail_stream_break}
        for name, share in shares.items():
            if not 0.0 <= share <= 1.0:
                raise ConfigError(f"LlmServerConfig.{name} must be in [0, 1], got {share}")
        if sum(shares.values()) > 1.0 + 1e-9:
            raise ConfigError(f"LlmServerConfig fault shares sum to more than 1: {shares}")
        if not 0.0 <= self.batch_fail_lines <= 1.0:
            raise ConfigError("LlmServerConfig.batch_fail_lines must be in [0, 1], got "
                              f"{self.batch_fail_lines}")
        for name, limit in (("requests_per_minute", self.requests_per_minute),
                            ("tokens_per_minute", self.tokens_per_minute)):
            if limit is not None and limit < 1:
                raise ConfigError(f"LlmServerConfig.{name} must be at least 1 or None, got {limit}")
        if (self.latency_s < 0 or self.fault_retry_after_s < 0 or self.timeout_hang_s < 0
                or self.outage_s < 0 or self.stream_batch_latency_s < 0
                or self.batch_completion_s < 0):
            raise ConfigError("LlmServerConfig delays must not be negative")
        if self.stream_batch_tokens < 1:
            raise ConfigError("LlmServerConfig.stream_batch_tokens must be at least 1, "
                              f"got {self.stream_batch_tokens}")
        if self.embedding_dimension < 1:
            raise ConfigError("LlmServerConfig.embedding_dimension must be at least 1, "
                              f"got {self.embedding_dimension}")


class Outcome(enum.StrEnum):
    OK = "ok"
    RATE_LIMITED = "429"
    SERVER_ERROR = "500"
    TIMEOUT = "timeout"
    INVALID_JSON = "invalid_json"
    EMPTY = "empty"
    OUTAGE = "outage"
    UNAUTHORIZED = "401"
    BAD_REQUEST = "400"
    NOT_FOUND = "404"  # a file or batch id the server does not hold
    CONFLICT = "409"  # cancelling a batch that has ended


class StreamEvent(enum.StrEnum):
    """What became of a streamed reply (``LlmServerStats.streams``)."""

    STARTED = "started"
    COMPLETED = "completed"  # its [DONE] was written
    BROKEN = "broken"  # cut on purpose: the marker or the stream-break fault
    DISCONNECTED = "disconnected"  # the client closed the connection before the end


class BatchEvent(enum.StrEnum):
    """What the Files and Batch APIs did (``LlmServerStats.batches``)."""

    FILE_UPLOADED = "files_uploaded"
    BATCH_CREATED = "batches_created"
    BATCH_FAILED = "batches_failed"  # its input file failed validation
    LINE_COMPLETED = "lines_completed"  # answered with a 200
    LINE_FAILED = "lines_failed"  # answered with an error status: a refusal, a 500
    LINE_EXPIRED = "lines_expired"
    LINE_CANCELLED = "lines_cancelled"


class Endpoint(enum.StrEnum):
    CHAT = "chat.completions"
    EMBEDDINGS = "embeddings"
    MODELS = "models"
    RERANK = "rerank"
    FILES = "files"
    BATCHES = "batches"


@dataclass(frozen=True, slots=True)
class LlmServerStats:
    """A snapshot of the counters; token figures sum the ``usage`` of every reply sent.

    ``requests`` maps endpoint → outcome → count. ``by_kind`` counts every well-formed
    chat request by task kind, whatever its outcome, so retries show up there.
    ``by_style`` counts chat replies by the ``ReplyStyle`` that shaped them (``bare``
    when the style drawn had nothing to change), and the requests a refusing style
    answered with a 400.
    """

    requests: dict[str, dict[str, int]] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    by_style: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    # The most tokens (prompt + completion) one chat reply used: what a budget may be
    # passed by per call in flight.
    largest_call_tokens: int = 0
    # Streamed replies by ``StreamEvent``: a test waits on these for a stream's end.
    streams: dict[str, int] = field(default_factory=dict)
    # The Batch API by ``BatchEvent``, and how often each custom_id was submitted in a
    # batch that passed validation: a line sent twice shows here.
    batches: dict[str, int] = field(default_factory=dict)
    submissions: dict[str, int] = field(default_factory=dict)

    def count(self, endpoint: Endpoint | str, outcome: Outcome | str | None = None) -> int:
        """Requests to ``endpoint`` with ``outcome``, or with any outcome when it is None."""
        outcomes = self.requests.get(str(endpoint), {})
        return sum(outcomes.values()) if outcome is None else outcomes.get(str(outcome), 0)

    def stream_count(self, event: StreamEvent | str) -> int:
        return self.streams.get(str(event), 0)

    def batch_count(self, event: BatchEvent | str) -> int:
        return self.batches.get(str(event), 0)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "by_kind": self.by_kind, "by_style": self.by_style,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "embedding_tokens": self.embedding_tokens,
                "largest_call_tokens": self.largest_call_tokens, "streams": self.streams,
                "batches": self.batches, "submissions": self.submissions}


class ServerCounters:
    """What the server received; a lock, because sync tests read it from another thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[str, dict[str, int]] = {}
        self._by_kind: dict[str, int] = {}
        self._by_style: dict[str, int] = {}
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._embedding_tokens = 0
        self._largest_call_tokens = 0
        self._streams: dict[str, int] = {}
        self._batches: dict[str, int] = {}
        self._submissions: dict[str, int] = {}

    def record(self, endpoint: Endpoint, outcome: Outcome) -> None:
        with self._lock:
            outcomes = self._requests.setdefault(endpoint.value, {})
            outcomes[outcome.value] = outcomes.get(outcome.value, 0) + 1

    def record_stream(self, event: StreamEvent) -> None:
        with self._lock:
            self._streams[event.value] = self._streams.get(event.value, 0) + 1

    def record_batch(self, event: BatchEvent, count: int = 1) -> None:
        with self._lock:
            self._batches[event.value] = self._batches.get(event.value, 0) + count

    def record_submission(self, custom_id: str) -> int:
        """Count one more submission of ``custom_id``; how many there have been."""
        with self._lock:
            self._submissions[custom_id] = self._submissions.get(custom_id, 0) + 1
            return self._submissions[custom_id]

    def record_kind(self, kind: str) -> None:
        with self._lock:
            self._by_kind[kind] = self._by_kind.get(kind, 0) + 1

    def record_style(self, style: str) -> None:
        with self._lock:
            self._by_style[style] = self._by_style.get(style, 0) + 1

    def add_usage(self, *, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self._prompt_tokens += prompt_tokens
            self._completion_tokens += completion_tokens
            self._largest_call_tokens = max(self._largest_call_tokens,
                                            prompt_tokens + completion_tokens)

    def add_embedding_tokens(self, tokens: int) -> None:
        with self._lock:
            self._embedding_tokens += tokens

    def snapshot(self) -> LlmServerStats:
        with self._lock:
            return LlmServerStats(
                requests={endpoint: dict(outcomes)
                          for endpoint, outcomes in self._requests.items()},
                by_kind=dict(self._by_kind), by_style=dict(self._by_style),
                prompt_tokens=self._prompt_tokens,
                completion_tokens=self._completion_tokens,
                embedding_tokens=self._embedding_tokens,
                largest_call_tokens=self._largest_call_tokens, streams=dict(self._streams),
                batches=dict(self._batches), submissions=dict(self._submissions))

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._by_kind.clear()
            self._by_style.clear()
            self._streams.clear()
            self._batches.clear()
            self._submissions.clear()
            self._prompt_tokens = self._completion_tokens = self._embedding_tokens = 0
            self._largest_call_tokens = 0


class SlidingWindowLimiter:
    """Requests and tokens per minute over a sliding window, as providers enforce them.

    A rejected request does not consume the window; ``admit`` returns the seconds until
    the window would admit it, 0.0 when it was admitted.
    """

    def __init__(self, requests_per_minute: int | None, tokens_per_minute: int | None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._rpm = requests_per_minute
        self._tpm = tokens_per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: deque[tuple[float, int]] = deque()  # (admitted at, tokens)

    def admit(self, tokens: int) -> float:
        with self._lock:
            now = self._clock()
            while self._entries and self._entries[0][0] <= now - RATE_WINDOW_S:
                self._entries.popleft()
            wait = max(self._request_wait(now), self._token_wait(now, tokens))
            if wait > 0.0:
                return wait
            self._entries.append((now, tokens))
            return 0.0

    def _request_wait(self, now: float) -> float:
        if self._rpm is None or len(self._entries) < self._rpm:
            return 0.0
        # The entry whose expiry leaves rpm - 1 in the window.
        blocking = self._entries[len(self._entries) - self._rpm]
        return max(blocking[0] + RATE_WINDOW_S - now, 1e-3)

    def _token_wait(self, now: float, tokens: int) -> float:
        if self._tpm is None:
            return 0.0
        if tokens > self._tpm:
            return RATE_WINDOW_S  # never fits; the full window is the honest hint
        used = sum(t for _, t in self._entries)
        if used + tokens <= self._tpm:
            return 0.0
        # Oldest first: the wait ends when enough of the window's tokens have expired.
        for admitted_at, entry_tokens in self._entries:
            used -= entry_tokens
            if used + tokens <= self._tpm:
                return max(admitted_at + RATE_WINDOW_S - now, 1e-3)
        return RATE_WINDOW_S

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()


class Fault(enum.StrEnum):
    NONE = "none"
    RATE_LIMITED = "429"
    SERVER_ERROR = "500"
    TIMEOUT = "timeout"
    INVALID_JSON = "invalid_json"
    STREAM_BREAK = "stream_break"  # a streamed reply only; others are sent whole


class FaultPicker:
    """One seeded draw per admitted request, split into the configured shares."""

    def __init__(self, config: LlmServerConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._random = random.Random(config.seed)

    def draw(self) -> Fault:
        with self._lock:
            point = self._random.random()
        for fault, share in ((Fault.RATE_LIMITED, self._config.fail_429),
                             (Fault.SERVER_ERROR, self._config.fail_500),
                             (Fault.TIMEOUT, self._config.fail_timeout),
                             (Fault.INVALID_JSON, self._config.fail_invalid_json),
                             (Fault.STREAM_BREAK, self._config.fail_stream_break)):
            if point < share:
                return fault
            point -= share
        return Fault.NONE

    def reset(self) -> None:
        with self._lock:
            self._random = random.Random(self._config.seed)


class OutageWindow:
    """The configured outage: armed by the first request of its kind, then every chat
    request inside the window is refused, whatever its kind."""

    def __init__(self, config: LlmServerConfig) -> None:
        self._kind = config.outage_on_kind
        self._length_s = config.outage_s
        self._lock = threading.Lock()
        self._ends_at: float | None = None

    def refuses(self, kind: str) -> bool:
        if not self._kind or self._length_s <= 0:
            return False
        now = time.monotonic()
        with self._lock:
            if self._ends_at is None and kind == self._kind:
                self._ends_at = now + self._length_s
            return self._ends_at is not None and now < self._ends_at

    @property
    def started(self) -> bool:
        with self._lock:
            return self._ends_at is not None

    def wait_over(self) -> None:
        """Block until a started outage has ended (tests that must call past it)."""
        with self._lock:
            ends_at = self._ends_at
        if ends_at is not None:
            time.sleep(max(0.0, ends_at - time.monotonic()))

    def reset(self) -> None:
        with self._lock:
            self._ends_at = None


def retry_after_header(seconds: float) -> dict[str, str]:
    """``Retry-After`` in whole seconds (HTTP) and the ``retry-after-ms`` OpenAI clients prefer."""
    return {"Retry-After": str(max(1, math.ceil(seconds))),
            "retry-after-ms": str(max(1, math.ceil(seconds * 1000)))}
