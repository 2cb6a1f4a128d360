"""``GET /v1/operations`` and ``POST /v1/indexes/{name}/operations/{operation}`` on a real
server: operations are listed as the client lists them, run on an index of their method
with text parameters, refused naming ``method`` on an index of another method and
``operation`` for a name no method has, and one that writes is refused to a read key.

The operations here are registered by the test (for ``extractive``, which needs no LLM,
and for ``kgbridge``), so the routes are checked apart from the ones methods ship."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from hopindex.api.client.remote import RemoteClient
from hopindex.backends.protocols import StateStore
from hopindex.methods.operations import MethodOperation, OperationAccess, OperationParam
from hopindex.methods.registry import registry
from tests.api.http.conftest import KEYS, Api, ApiFactory

pytestmark = pytest.mark.integration

INDEX = "ops"
ECHO = "probe.echo"
TOUCH = "probe.touch"
BRIDGE_ONLY = "probe.bridge_only"
touched: list[tuple[str, str]] = []


def _echo(state: StateStore, index: str, params: Mapping[str, str]) -> dict[str, Any]:
    return {"index": index, "params": dict(params)}


def _touch(state: StateStore, index: str, params: Mapping[str, str]) -> list[str]:
    touched.append((index, params["by"]))
    return [index, params["by"]]


PROBES = (
    MethodOperation(method="extractive", name=ECHO, summary="echo the parameters",
                    access=OperationAccess.READ, run=_echo,
                    params=(OperationParam("word", "a word to echo", max_chars=8),)),
    MethodOperation(method="extractive", name=TOUCH, summary="record who touched it",
                    access=OperationAccess.WRITE, run=_touch,
                    params=(OperationParam("by", "who", required=True),)),
    MethodOperation(method="kgbridge", name=BRIDGE_ONLY, summary="only kgbridge has it",
                    access=OperationAccess.READ, run=_echo),
)


@pytest.fixture(autouse=True)
def probes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test's operations in the registry the server reads (this process's), for the
    test only."""
    operations = registry().operations
    for probe in PROBES:
        monkeypatch.setitem(operations, (probe.method, probe.name), probe)
    touched.clear()
    yield


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    api = make_api()
    created = api.call("POST", "/v1/indexes", json={"name": INDEX, "method": "extractive"})
    assert created.status_code == 201, created.text
    return api


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    found: dict[str, Any] = response.json()["error"]
    return found


def test_operations_are_listed_as_the_client_lists_them(api: Api) -> None:
    """A read key lists them, of one method or all; an unknown method is a 400."""
    mine = api.call("GET", "/v1/operations", key="read", params={"method": "extractive"})
    assert mine.status_code == 200, mine.text
    listed = {o["name"]: o for o in mine.json()["operations"]}
    assert {ECHO, TOUCH} <= set(listed) and BRIDGE_ONLY not in listed
    assert listed[ECHO] == {"name": ECHO, "method": "extractive",
                            "summary": "echo the parameters", "writes": False,
                            "params": {"word": {"help": "a word to echo", "required": False,
                                                "max_chars": 8}}}
    assert listed[TOUCH]["writes"] is True
    every = api.call("GET", "/v1/operations", key="read").json()["operations"]
    assert {(o["method"], o["name"]) for o in every} >= {(p.method, p.name) for p in PROBES}
    client = RemoteClient(api.url, KEYS["read"])
    assert [o.as_dict() for o in client.operations.list_operations("extractive")] == \
        mine.json()["operations"]
    assert _error(api.call("GET", "/v1/operations", params={"method": "nosuch"}),
                  400)["field"] == "method"


def test_an_operation_runs_on_an_index_of_its_method(api: Api) -> None:
    """The answer is the operation's JSON value, its parameters checked by it."""
    ran = api.call("POST", f"/v1/indexes/{INDEX}/operations/{ECHO}", key="read",
                   json={"word": "hello"})
    assert ran.status_code == 200, ran.text
    assert ran.json() == {"index": INDEX, "params": {"word": "hello"}}
    bare = api.call("POST", f"/v1/indexes/{INDEX}/operations/{ECHO}", key="read")
    assert bare.json() == {"index": INDEX, "params": {}}
    client = RemoteClient(api.url, KEYS["read"])
    assert client.operations.run_operation(INDEX, ECHO, {"word": "hi"}) == \
        {"index": INDEX, "params": {"word": "hi"}}
    assert _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/{ECHO}",
                           json={"colour": "red"}), 400)["field"] == "colour"
    assert _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/{ECHO}",
                           json={"word": "far too long"}), 400)["field"] == "word"
    assert _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/{ECHO}",
                           json={"word": 3}), 400)["field"] == "word"


def test_an_operation_of_another_method_is_a_400_naming_method(api: Api) -> None:
    """On an extractive index, an operation only kgbridge has is refused on field
    ``method``, naming kgbridge; a name no method has on field ``operation``."""
    found = _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/{BRIDGE_ONLY}"), 400)
    assert found["code"] == "invalid_input" and found["field"] == "method"
    assert "'extractive'" in found["message"] and "kgbridge" in found["message"]
    unknown = _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/probe.nosuch"), 400)
    assert unknown["field"] == "operation"
    missing = _error(api.call("POST", f"/v1/indexes/nosuch/operations/{ECHO}"), 404)
    assert missing["code"] == "not_found"


def test_a_read_key_is_refused_an_operation_that_writes(api: Api) -> None:
    """403 for the read key, before the operation runs; the write key runs it. A key for
    other indexes is refused on this one whatever the operation."""
    refused = _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/{TOUCH}", key="read",
                              json={"by": "reader"}), 403)
    assert refused["code"] == "forbidden" and "needs write access" in refused["message"]
    assert touched == []
    ran = api.call("POST", f"/v1/indexes/{INDEX}/operations/{TOUCH}", json={"by": "writer"})
    assert ran.status_code == 200, ran.text
    assert ran.json() == [INDEX, "writer"] and touched == [(INDEX, "writer")]
    assert _error(api.call("POST", f"/v1/indexes/{INDEX}/operations/{ECHO}", key="scoped"),
                  403)["field"] == "index"
