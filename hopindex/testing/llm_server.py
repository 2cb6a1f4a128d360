"""A local OpenAI-compatible server: the only stand-in for the paid LLM API.

Serves ``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models`` in
OpenAI's shapes (the official ``openai`` client parses them), ``POST /rerank`` and
``POST /v1/rerank`` in the Cohere and TEI rerank shapes, scored by word overlap
(``rerank_api``), the Files and Batch APIs (``/v1/files``, ``/v1/batches``:
``llm_batches``), plus ``GET /_stats`` and ``POST /_reset`` for tests and benchmarks
(``llm_api``). Replies are computed
deterministically from the prompt (``llm_responses``), sent whole or, with
``"stream": true``, as server-sent chunks at a configurable pace (``llm_stream``);
latency, per-minute limits and faults (mid-stream breaks included) come from
``LlmServerConfig`` (``llm_limits``). This module runs it: in an event loop, in a
daemon thread, or standalone.

Usage::

    async with LlmTestServer(LlmServerConfig(api_key="k")) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k")

    with running_llm_server(LlmServerConfig(fail_500=0.1)) as server:  # sync tests
        openai.OpenAI(base_url=server.base_url, api_key="x")

    python -m hopindex.testing.llm_server --port 8089 --latency-ms 200 --rpm 600
    python -m hopindex.testing.llm_server --reply-styles fenced,prose,think  # or: all
    python -m hopindex.testing.llm_server --stream-batch-latency-ms 50 --stream-batch-tokens 2
    python -m hopindex.testing.llm_server --batch-completion-s 30 --batch-fail-lines 0.1

Reply styles (``reply_styles``) make it answer in the forms real providers use: fenced
or prose-wrapped JSON, reasoning blocks, numbers as strings, cut replies, refused
``response_format``; each reply draws one style by a hash of the seed and its messages.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import TracebackType

from aiohttp import web

from hopindex.core.errors import BackendError, HopindexError
from hopindex.core.logging import get_logger
from hopindex.testing.llm_api import OpenAiTestApi
from hopindex.testing.llm_limits import LlmServerConfig, LlmServerStats
from hopindex.testing.reply_styles import ALL_STYLES, ReplyStyle

__all__ = ["ALL_STYLES", "LlmServerConfig", "LlmServerStats", "LlmTestServer", "ReplyStyle",
           "main", "running_llm_server"]

log = get_logger(__name__)

# aiohttp waits this long for in-flight handlers at shutdown before cancelling them.
_SHUTDOWN_GRACE_S = 1.0


class LlmTestServer:
    """The aiohttp server, startable from async code or in a daemon thread for sync tests."""

    def __init__(self, config: LlmServerConfig | None = None) -> None:
        self.config = config or LlmServerConfig()
        self.api = OpenAiTestApi(self.config)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- addresses and counters ---------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise BackendError("the LLM test server is not running")
        return self._port

    @property
    def root_url(self) -> str:
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What ``openai.OpenAI(base_url=…)`` takes."""
        return f"{self.root_url}/v1"

    @property
    def stats(self) -> LlmServerStats:
        return self.api.stats

    def reset(self) -> None:
        """Zero the counters, empty the rate window and restart the fault sequence."""
        self.api.reset()

    # --- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise BackendError("the LLM test server is already running")
        # handler_cancellation: a client that gives up on a hanging request frees its handler.
        runner = web.AppRunner(self.api.build_app(), access_log=None, handler_cancellation=True,
                               shutdown_timeout=_SHUTDOWN_GRACE_S)
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise BackendError(f"LLM test server cannot listen on "
                               f"{self.config.host}:{self.config.port}: {exc}") from exc
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        log.info("llm_test_server_started", base_url=self.base_url, model=self.config.model,
                 latency_s=self.config.latency_s, rpm=self.config.requests_per_minute,
                 tpm=self.config.tokens_per_minute, fail_429=self.config.fail_429,
                 fail_500=self.config.fail_500, fail_timeout=self.config.fail_timeout,
                 fail_invalid_json=self.config.fail_invalid_json, seed=self.config.seed,
                 stream_batch_tokens=self.config.stream_batch_tokens,
                 stream_batch_latency_s=self.config.stream_batch_latency_s,
                 reply_styles=[style.value for style in self.config.reply_styles] or ["bare"])

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self.api.cancel_hanging()
        await runner.cleanup()
        # One entry per custom_id would swamp the line after a batch run.
        figures = {name: value for name, value in self.stats.as_dict().items()
                   if name != "submissions"}
        log.info("llm_test_server_stopped", port=self._port, **figures)
        self._port = None

    async def __aenter__(self) -> LlmTestServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def start_in_thread(self, timeout_s: float = 10.0) -> LlmTestServer:
        """Run the server on its own event loop in a daemon thread; returns once it listens."""
        if self._thread is not None:
            raise BackendError("the LLM test server is already running in a thread")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self._run_loop, args=(loop,), name="llm-test-server",
                                  daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout_s)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout_s)
            raise
        self._loop, self._thread = loop, thread
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop a server started by :meth:`start_in_thread`; hanging requests are cancelled."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.close(), loop).result(timeout_s)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout_s)
            self._loop = self._thread = None

    def __enter__(self) -> LlmTestServer:
        return self.start_in_thread()

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    # --- handlers ---------------------------------------------------------------------


@contextlib.contextmanager
def running_llm_server(config: LlmServerConfig | None = None) -> Iterator[LlmTestServer]:
    """A server in a daemon thread for the ``with`` block: the shape a pytest fixture yields."""
    server = LlmTestServer(config).start_in_thread()
    try:
        yield server
    finally:
        server.stop()


# --- standalone ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    defaults = LlmServerConfig()
    parser = argparse.ArgumentParser(
        prog="python -m hopindex.testing.llm_server",
        description="Local OpenAI-compatible test server with deterministic replies.")
    parser.add_argument("--host", default=defaults.host)
    parser.add_argument("--port", type=int, default=8089, help="0 picks a free port")
    parser.add_argument("--model", default=defaults.model)
    parser.add_argument("--embedding-model", default=defaults.embedding_model)
    parser.add_argument("--api-key", default=None, help="require this bearer token")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay per request")
    parser.add_argument("--rpm", type=int, default=None, help="requests per minute")
    parser.add_argument("--tpm", type=int, default=None, help="tokens per minute")
    parser.add_argument("--fail-429", type=float, default=0.0, help="share of injected 429s")
    parser.add_argument("--fail-500", type=float, default=0.0, help="share of injected 500s")
    parser.add_argument("--fail-timeout", type=float, default=0.0,
                        help="share of requests that hang")
    parser.add_argument("--fail-invalid-json", type=float, default=0.0,
                        help="share of JSON replies sent truncated")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--reply-styles", default="",
                        help="comma-separated reply styles mixed by seed ("
                        + ",".join(style.value for style in ReplyStyle)
                        + "), or all; default bare JSON only")
    parser.add_argument("--embedding-dimension", type=int, default=defaults.embedding_dimension)
    parser.add_argument("--stream-batch-latency-ms", type=float, default=0.0,
                        help="delay before each batch of a streamed reply")
    parser.add_argument("--stream-batch-tokens", type=int, default=defaults.stream_batch_tokens,
                        help="words per batch of a streamed reply")
    parser.add_argument("--batch-completion-s", type=float, default=0.0,
                        help="seconds a Batch API batch stays in_progress (0: done on the "
                        "first retrieve)")
    parser.add_argument("--batch-fail-lines", type=float, default=0.0,
                        help="share of batch lines answered with a 500 on their first "
                        "submission")
    parser.add_argument("--batch-expire-first", type=int, default=0, metavar="N",
                        help="only the first N batches expire (half their lines done)")
    parser.add_argument("--batch-expire", action="store_true",
                        help="every batch expires with half of its lines done")
    parser.add_argument("--log-level", default="INFO")
    return parser


def config_from_args(args: argparse.Namespace) -> LlmServerConfig:
    return LlmServerConfig(
        host=args.host, port=args.port, model=args.model, embedding_model=args.embedding_model,
        api_key=args.api_key, latency_s=args.latency_ms / 1000.0,
        requests_per_minute=args.rpm, tokens_per_minute=args.tpm, fail_429=args.fail_429,
        fail_500=args.fail_500, fail_timeout=args.fail_timeout,
        fail_invalid_json=args.fail_invalid_json, seed=args.seed,
        embedding_dimension=args.embedding_dimension,
        reply_styles=ReplyStyle.parse_list(args.reply_styles),
        stream_batch_latency_s=args.stream_batch_latency_ms / 1000.0,
        stream_batch_tokens=args.stream_batch_tokens,
        batch_completion_s=args.batch_completion_s, batch_fail_lines=args.batch_fail_lines,
        batch_expire=args.batch_expire, batch_expire_first=args.batch_expire_first)


async def _serve(config: LlmServerConfig) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    async with LlmTestServer(config) as server:
        # The one stdout line: scripts that start it with --port 0 read the URL from it.
        print(server.base_url, flush=True)
        await stopping.wait()


def main(argv: Sequence[str] | None = None) -> int:
    from hopindex.core.logging import configure_logging
    from hopindex.core.settings import Settings

    parser = _parser()
    args = parser.parse_args(argv)
    configure_logging(Settings(log_level=args.log_level))
    try:
        config = config_from_args(args)
    except HopindexError as exc:
        parser.error(str(exc))  # exits with status 2 and the usage line
    try:
        asyncio.run(_serve(config))
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
