"""serve_asgi: one ASGI call from an aiohttp handler, against plain ASGI callables written
here (no starlette), on a real loopback server driven by aiohttp's client.

Every wait is on a condition (an event, bytes read) under a deadline; a bridge that
buffers, reads the body first, spins or never reports a disconnect fails, not hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import pytest
import structlog
from aiohttp import web

from hopindex.api.http.asgi_bridge import AsgiApp, Message, Receive, Scope, Send, serve_asgi
from hopindex.api.http.routing import REQUEST_ID_HEADER, REQUEST_ID_KEY

# One deadline over each test's waits (not a pause): generous for a loaded machine.
DEADLINE_S = 30.0
# How many receive() calls the test's disconnect listener makes at most: a bridge whose
# receive() never suspends would otherwise hold the event loop for good.
LISTENER_CAP = 1000


@web.middleware
async def _request_id(request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                      ) -> web.StreamResponse:
    # What answer_middleware does first, without the service behind it.
    request[REQUEST_ID_KEY] = os.urandom(8).hex()
    return await handler(request)


@contextlib.asynccontextmanager
async def serving(apps: Mapping[str, AsgiApp], state: Mapping[str, Any] | None = None,
                  ) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    """A loopback server answering ``/{name}`` with ``apps[name]`` through serve_asgi,
    and a client session for it."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return await serve_asgi(apps[request.match_info["name"]], request, state=state)

    app = web.Application(middlewares=[_request_id])
    app.router.add_route("*", "/{name}", handler)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        async with aiohttp.ClientSession() as session:
            yield f"http://{host}:{port}", session
    finally:
        await runner.cleanup()


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(DEADLINE_S):
            await scenario()

    asyncio.run(bounded())


async def read_body(receive: Receive) -> list[Message]:
    messages = [await receive()]
    while messages[-1].get("more_body"):
        messages.append(await receive())
    return messages


async def start(send: Send, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None,
                ) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": headers or [(b"content-type", b"text/plain")]})


async def chunk(send: Send, body: bytes, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": more})


def test_a_streamed_response_arrives_chunk_by_chunk() -> None:
    """The client reads the first chunk while the app still waits (on an event the test
    sets only once the client has it) to send the second: nothing is held back."""
    release = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send)
        await chunk(send, b"one\n")
        await release.wait()
        await chunk(send, b"two\n", more=False)

    async def scenario() -> None:
        async with (serving({"stream": app}) as (url, session),
                    session.get(f"{url}/stream") as response):
            assert response.headers["Transfer-Encoding"] == "chunked"
            assert await response.content.readline() == b"one\n"
            release.set()
            assert await response.read() == b"two\n"

    run(scenario)


def test_a_large_body_reaches_the_app_in_pieces_as_it_arrives() -> None:
    """A 6 MB body reaches the app as several http.request messages, more_body true on all
    but the last, byte for byte; the first arrives while the client still holds back the
    rest (until the app has it), so the bridge did not read the whole body first."""
    payload = os.urandom(6 * 1024 * 1024)
    first_part = 1024 * 1024
    got_first = asyncio.Event()
    messages: list[Message] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        messages.append(await receive())
        got_first.set()
        while messages[-1]["more_body"]:
            messages.append(await receive())
        await start(send)
        await chunk(send, hashlib.sha256(b"".join(m["body"] for m in messages)).hexdigest()
                    .encode(), more=False)

    async def body() -> AsyncIterator[bytes]:
        yield payload[:first_part]
        await got_first.wait()
        for at in range(first_part, len(payload), first_part):
            yield payload[at:at + first_part]

    async def scenario() -> None:
        async with (serving({"upload": app}) as (url, session),
                    session.post(f"{url}/upload", data=body()) as response):
            assert await response.text() == hashlib.sha256(payload).hexdigest()
        assert len(messages) > 1
        assert all(m["type"] == "http.request" for m in messages)
        assert [m["more_body"] for m in messages] == [True] * (len(messages) - 1) + [False]
        assert b"".join(m["body"] for m in messages) == payload

    run(scenario)


def test_a_disconnect_listener_waits_instead_of_spinning() -> None:
    """While an SSE-like app waits between events (the server meanwhile answers other
    requests), a concurrent disconnect listener, as sse-starlette runs, makes one
    receive() call, which returns http.disconnect once the response is over: at most
    two calls in all. A bridge whose receive() answers at once (aiohttp-asgi's empty
    http.request) makes calls without end, LISTENER_CAP here."""
    release = asyncio.Event()
    calls: list[str] = []

    async def listen(receive: Receive) -> None:
        while len(calls) < LISTENER_CAP:
            calls.append((await receive())["type"])
            if calls[-1] == "http.disconnect":
                return

    async def sse(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send, headers=[(b"content-type", b"text/event-stream")])
        listener = asyncio.create_task(listen(receive))
        await chunk(send, b"data: one\n\n")
        await release.wait()
        await chunk(send, b"data: two\n\n", more=False)
        await listener

    async def ping(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send, headers=[(b"content-length", b"4")])
        await chunk(send, b"pong", more=False)

    async def scenario() -> None:
        async with (serving({"sse": sse, "ping": ping}) as (url, session),
                    session.get(f"{url}/sse") as response):
            assert await response.content.readuntil(b"\n\n") == b"data: one\n\n"
            for _ in range(20):  # the loop turns many times while the app waits
                async with session.get(f"{url}/ping") as pong:
                    assert await pong.read() == b"pong"
            release.set()
            assert await response.read() == b"data: two\n\n"
        # One call in fact: it waits, and the end of the response ends it.
        assert len(calls) <= 2 and calls[-1] == "http.disconnect", calls[:5]

    run(scenario)


def test_a_client_that_leaves_mid_stream_is_a_disconnect() -> None:
    """The client closes its connection after the first chunk: the app's waiting
    receive() returns http.disconnect (aiohttp does not cancel the handler, so the
    bridge must see the connection close), later calls return it again, and a write
    then raises OSError."""
    outcome: dict[str, Any] = {}
    seen = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send)
        await chunk(send, b"one\n")
        outcome["first"] = (await receive())["type"]
        outcome["again"] = (await receive())["type"]
        try:
            await chunk(send, b"two\n")
        except OSError as exc:
            outcome["write"] = exc
        seen.set()

    async def scenario() -> None:
        async with serving({"stream": app}) as (url, session):
            response = await session.get(f"{url}/stream")
            assert await response.content.readline() == b"one\n"
            response.close()  # drops the connection, not back to the pool
            await seen.wait()
        assert outcome["first"] == outcome["again"] == "http.disconnect"
        assert isinstance(outcome["write"], OSError)

    run(scenario)


def test_repeated_headers_both_ways_and_state_as_a_copy() -> None:
    """Two Set-Cookie headers from the app both reach the client; the request's headers
    reach the scope lower-cased, in order, with repeats; the scope describes the request;
    ``state`` reaches scope["state"] as a copy the app may change freely."""
    state = {"principal": "reader"}
    scopes: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scopes.append(scope)
        scope["state"]["seen"] = True
        await read_body(receive)
        await start(send, headers=[(b"set-cookie", b"a=1"), (b"set-cookie", b"b=2"),
                                   (b"content-length", b"2")])
        await chunk(send, b"ok", more=False)

    async def scenario() -> None:
        async with serving({"headers": app}, state=state) as (url, session):
            sent = [("X-Repeat", "first"), ("X-Other", "x"), ("X-Repeat", "second")]
            async with session.get(f"{url}/headers?q=a%20b&q=c",
                                   headers=sent) as response:
                assert await response.read() == b"ok"
                assert response.headers.getall("Set-Cookie") == ["a=1", "b=2"]
                assert "Transfer-Encoding" not in response.headers  # it gave a length
        scope = scopes[0]
        ours = [(name, value) for name, value in scope["headers"]
                if name in (b"x-repeat", b"x-other")]
        assert ours == [(b"x-repeat", b"first"), (b"x-other", b"x"), (b"x-repeat", b"second")]
        assert (scope["type"], scope["method"], scope["http_version"]) == ("http", "GET", "1.1")
        assert (scope["path"], scope["raw_path"]) == ("/headers", b"/headers")
        assert scope["query_string"] == b"q=a%20b&q=c" and scope["root_path"] == ""
        assert scope["client"][0] == scope["server"][0] == "127.0.0.1"
        assert scope["state"] == {"principal": "reader", "seen": True}
        assert state == {"principal": "reader"}

    run(scenario)


@pytest.mark.parametrize("when", ["raises", "returns"])
def test_an_app_that_fails_before_answering_gets_the_api_error(when: str) -> None:
    """An app that raises (or returns) before starting a response: the client gets the
    API's JSON 500 with the request id in body and X-Request-Id, one log event carries
    the traceback, and the server goes on serving the next request."""

    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        if when == "raises":
            raise ValueError("the app broke")

    async def fine(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send, headers=[(b"content-length", b"2")])
        await chunk(send, b"ok", more=False)

    async def scenario() -> None:
        async with serving({"broken": broken, "fine": fine}) as (url, session):
            with structlog.testing.capture_logs() as entries:
                async with session.post(f"{url}/broken", data=b"{}") as response:
                    assert response.status == 500
                    assert response.content_type == "application/json"
                    error = (await response.json())["error"]
            assert error["code"] == "internal"
            assert error["request_id"] == response.headers[REQUEST_ID_HEADER]
            failed = [e for e in entries if e["event"] == "asgi_app_failed"]
            assert len(failed) == 1
            assert ("ValueError: the app broke" in failed[0]["traceback"]
                    if when == "raises" else failed[0]["traceback"] is None)
            async with session.get(f"{url}/fine") as again:
                assert (again.status, await again.read()) == (200, b"ok")

    run(scenario)


def test_an_app_that_fails_mid_answer_cuts_the_connection() -> None:
    """An app that raises after its first chunk: the client's read ends with an error
    (no last chunk), not a hang and not a body that looks whole; the server serves on."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send)
        await chunk(send, b"one\n")
        raise ValueError("the app broke mid-answer")

    async def fine(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send, headers=[(b"content-length", b"2")])
        await chunk(send, b"ok", more=False)

    async def scenario() -> None:
        async with serving({"broken": app, "fine": fine}) as (url, session):
            with structlog.testing.capture_logs() as entries:
                async with session.get(f"{url}/broken") as response:
                    assert response.status == 200
                    with pytest.raises(aiohttp.ClientPayloadError):
                        await response.read()
            failed = [e for e in entries if e["event"] == "asgi_app_failed"]
            assert [(e["started"], e["error_type"]) for e in failed] == [(True, "ValueError")]
            async with session.get(f"{url}/fine") as again:
                assert (again.status, await again.read()) == (200, b"ok")

    run(scenario)


@pytest.mark.parametrize(("method", "status"), [("HEAD", 200), ("GET", 204), ("GET", 304)])
def test_no_body_goes_out_where_http_allows_none(method: str, status: int) -> None:
    """An app that sends a body to a HEAD request or with a 204 or 304 (as Starlette's
    responses do, leaving it to the server): the bytes stay out of the connection, where
    a keep-alive client would read them as the start of its next response."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await start(send, status)
        await chunk(send, b"not for the wire", more=False)

    async def scenario() -> None:
        async with serving({"empty": app}) as (url, _):
            host, port = url.removeprefix("http://").split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(f"{method} /empty HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                         .encode())
            answer = await reader.read()  # to the server's close
            writer.close()
        assert answer.startswith(f"HTTP/1.1 {status} ".encode())
        assert answer.endswith(b"\r\n\r\n") and b"not for the wire" not in answer

    run(scenario)
