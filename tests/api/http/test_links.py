"""``GET /v1/indexes/{name}/links`` and ``POST /v1/indexes/{name}/links/{link_id}/reject``
on a real loopback server with an LLM (the local test server), and the CLI's remote
mode driving them. Every answer is checked against the OpenAPI spec the server
publishes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.exit_codes import ExitCode
from hopindex.methods.kgbridge.operations import MAX_BY_CHARS
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import KEYS, Api, ApiFactory, llm_settings_of
from tests.methods.kgbridge.corpus import CORPUS, LINKED_KEYS

pytestmark = pytest.mark.integration

TITLES = {doc.doc_id: doc.title for doc in CORPUS}
DOCS = [{"id": d.doc_id, "title": d.title, "text": d.text} for d in CORPUS]


@pytest.fixture(scope="module")
def api(make_api: ApiFactory, llm: LlmTestServer) -> Api:
    """A server with an LLM holding "plain", an empty extractive index."""
    api = make_api(**llm_settings_of(llm))
    created = api.call("POST", "/v1/indexes", json={"name": "plain", "method": "extractive"})
    assert created.status_code == 201, created.text
    return api


def build(api: Api, index: str) -> list[dict[str, Any]]:
    """Ingest the kgbridge corpus into ``index``; its links, listed with a read key."""
    accepted = api.call("POST", f"/v1/indexes/{index}/documents", params={"method": "kgbridge"},
                        json=DOCS)
    assert accepted.status_code == 202, accepted.text
    assert api.wait_job(accepted.json()["job_id"])["state"] == "succeeded"
    listed = api.call("GET", f"/v1/indexes/{index}/links", key="read")
    assert listed.status_code == 200, listed.text
    links: list[dict[str, Any]] = listed.json()["links"]
    return links


def listed_here(api: Api, index: str) -> Any:
    """The ``links.list`` operation run in this process, on the server's service."""
    return LocalClient(api.service).operations.run_operation(index, "links.list")


def error(api: Api, method: str, path: str, status: int, **kwargs: Any) -> dict[str, Any]:
    answered = api.call(method, path, **kwargs)
    assert answered.status_code == status, answered.text
    found: dict[str, Any] = answered.json()["error"]
    return found


def test_links_are_listed_all_or_by_entity(api: Api) -> None:
    """A read key lists every link by entity, each end with its document's title, and
    the service's own listing is the same; ``?entity=`` selects one name whatever its
    case and spacing; a name nobody links has none; an empty ``entity`` is a 400."""
    links = build(api, "kg-list")
    assert [x["entity"] for x in links] == sorted(LINKED_KEYS)
    assert links == listed_here(api, "kg-list")
    for link in links:
        assert {link["a"]["title"], link["b"]["title"]} == {TITLES["ada"], TITLES["engine"]}
    one = api.call("GET", "/v1/indexes/kg-list/links", key="read",
                   params={"entity": " analytical   ENGINE "})
    assert one.status_code == 200 and one.json() == {"links": [links[1]]}
    none = api.call("GET", "/v1/indexes/kg-list/links", params={"entity": "Nobody"})
    assert none.status_code == 200 and none.json() == {"links": []}
    empty = error(api, "GET", "/v1/indexes/kg-list/links", 400, params={"entity": ""})
    assert empty["field"] == "entity"


def test_a_rejection_removes_the_link_and_a_second_keeps_the_first(api: Api) -> None:
    """A read key may not reject (403); a write key's rejection answers the link, rejected
    by whom and when; the listing no longer has it; rejecting it again answers 200 with
    the first rejection, and the other link stays."""
    links = build(api, "kg-reject")
    path = f"/v1/indexes/kg-reject/links/{links[0]['link_id']}/reject"
    assert api.call("POST", path, key="read", json={"by": "reader"}).status_code == 403
    rejected = api.call("POST", path, json={"by": "reviewer"})
    assert rejected.status_code == 200, rejected.text
    body = rejected.json()
    assert (body["state"], body["by"], body["entity"]) == ("rejected", "reviewer",
                                                           links[0]["entity"])
    assert body["a"] == links[0]["a"] and body["rejected_at"]
    listed = api.call("GET", "/v1/indexes/kg-reject/links").json()["links"]
    assert listed == links[1:]
    again = api.call("POST", path, json={"by": "someone else"})
    assert again.status_code == 200, again.text
    assert again.json() == {"link_id": links[0]["link_id"], "state": "rejected",
                            "by": "reviewer", "rejected_at": body["rejected_at"]}


def test_unknown_indexes_and_links_other_methods_and_bad_bodies_are_refused(api: Api) -> None:
    """404 for an unknown index (listing or rejecting) or link id; 400 on field method
    for an index of another method, naming it; 400 naming ``by`` when it is blank,
    missing, too long or not a string, and an unknown body field; 415 for a body that
    is not JSON. No refused request rejects anything."""
    links = build(api, "kg-errors")
    link_path = f"/v1/indexes/kg-errors/links/{links[0]['link_id']}/reject"
    assert "no index 'nothing'" in error(api, "GET", "/v1/indexes/nothing/links",
                                         404)["message"]
    error(api, "POST", f"/v1/indexes/nothing/links/{links[0]['link_id']}/reject", 404,
          json={"by": "reviewer"})
    unknown = error(api, "POST", "/v1/indexes/kg-errors/links/feedbeef/reject", 404,
                    json={"by": "reviewer"})
    assert "no link 'feedbeef'" in unknown["message"]
    for method, path in (("GET", "/v1/indexes/plain/links"),
                         ("POST", f"/v1/indexes/plain/links/{links[0]['link_id']}/reject")):
        wrong = error(api, method, path, 400, json={"by": "reviewer"} if method == "POST"
                      else None)
        assert wrong["field"] == "method"
        assert "index 'plain' is built with 'extractive'" in wrong["message"]
    for body, field in (({"by": "  "}, "by"), ({}, "by"), ({"by": 7}, "by"),
                        ({"by": "x" * (MAX_BY_CHARS + 1)}, "by"),
                        ({"by": "reviewer", "why": "no"}, "why")):
        assert error(api, "POST", link_path, 400, json=body)["field"] == field, body
    error(api, "POST", link_path, 415, data="by=reviewer",
          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert api.call("GET", "/v1/indexes/kg-errors/links").json()["links"] == links


def test_the_remote_cli_lists_and_rejects_through_the_api(api: Api, tmp_path: Path) -> None:
    """`hopindex links list|reject` with HOPINDEX_API_URL run the operations on the server,
    print what it answers and exit with its reason, 66 for an unknown index or link and
    65 for an index of another method or a blank entity, as locally; no local data dir
    is opened."""
    links = build(api, "kg-remote")
    cli = CliRunner(env={"HOPINDEX_API_URL": api.url, "HOPINDEX_API_KEY": KEYS["write"],
                         "HOPINDEX_DATA_DIR": str(tmp_path / "local")})
    listed = cli.invoke(main, ["links", "list", "--index", "kg-remote", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output) == links
    shown = cli.invoke(main, ["links", "list", "--index", "kg-remote", "--entity",
                              "Ada Lovelace"])
    assert shown.exit_code == 0 and links[0]["link_id"] in shown.output
    assert links[1]["link_id"] not in shown.output
    rejected = cli.invoke(main, ["links", "reject", "--index", "kg-remote", "--link",
                                 links[0]["link_id"], "--by", "remote reviewer"])
    assert rejected.exit_code == 0, rejected.output
    assert "by remote reviewer" in rejected.output
    assert listed_here(api, "kg-remote") == links[1:]
    for args, code, message in (
            (["list", "--index", "nothing"], ExitCode.NOT_FOUND, "no index 'nothing'"),
            (["list", "--index", "plain"], ExitCode.DATA_ERROR, "built with 'extractive'"),
            (["list", "--index", "kg-remote", "--entity", ""], ExitCode.DATA_ERROR,
             "entity: give an entity name"),
            (["reject", "--index", "kg-remote", "--link", "feedbeef"], ExitCode.NOT_FOUND,
             "no link 'feedbeef'")):
        refused = cli.invoke(main, ["links", *args])
        assert refused.exit_code == code, (args, refused.output)
        # The remote client raises the error the server names, so it reads as locally.
        assert message in refused.output and "Traceback" not in refused.output
    assert not (tmp_path / "local").exists()
