"""Auditing a kgbridge index's SAME_AS links through the local client and CLI: the
``links.list`` / ``links.reject`` operations and ``hopindex links list`` / ``hopindex
links reject``, on indexes built against the local LLM test server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hopindex import Client
from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.exit_codes import ExitCode
from hopindex.core.errors import InvalidInputError, NotFoundError
from hopindex.methods.kgbridge.links import REJECTED, UnknownLinkError
from hopindex.methods.kgbridge.operations import MAX_BY_CHARS, render_links
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import LlmClientFactory, ingest_documents, llm_settings
from tests.methods.kgbridge.corpus import CORPUS, INDEX, LINKED_KEYS

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
TITLES = {doc.doc_id: doc.title for doc in CORPUS}


def list_links(client: LocalClient, index: str, entity: str | None = None) -> Any:
    """The ``links.list`` operation of ``index``."""
    params = {} if entity is None else {"entity": entity}
    return client.operations.run_operation(index, "links.list", params)


def reject_link(client: LocalClient, index: str, link_id: str, by: str) -> Any:
    return client.operations.run_operation(index, "links.reject",
                                           {"link_id": link_id, "by": by})


@pytest.fixture
def kg(start_server: StartServer, make_llm_client: LlmClientFactory) -> LocalClient:
    """A client holding the kgbridge corpus in INDEX, and an empty extractive index;
    chat and embeddings from the test server (its hashed bag of words, so cosines are
    the same on every run)."""
    server = start_server()
    client = make_llm_client(server, embedder_url=f"openai://{server.config.embedding_model}")
    ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    client.indexes.create_index("plain", "extractive")
    return client


def test_links_are_listed_with_their_documents_titles(kg: LocalClient) -> None:
    """Every link, by entity, each end carrying its document's title; one name's links
    whatever its case and spacing; none for a name nobody links."""
    every = list_links(kg, INDEX)
    assert [link["entity"] for link in every] == sorted(LINKED_KEYS)
    for link in every:
        for end in (link["a"], link["b"]):
            assert end["title"] == TITLES[end["doc_id"]]
        assert link["state"] == "linked" and link["reason"]
        # Both names are in the same two documents, "ada" and "engine".
        assert {link["a"]["doc_id"], link["b"]["doc_id"]} == {"ada", "engine"}
    assert list_links(kg, INDEX, " analytical   ENGINE ") == [every[1]]
    assert list_links(kg, INDEX, "Nobody At All") == []


def test_a_rejected_link_is_gone_and_a_second_rejection_keeps_the_first(
        kg: LocalClient) -> None:
    """Rejecting returns the link with who rejected it and when; it leaves the listing at
    once; rejecting it again returns the first rejection, unchanged."""
    (link,) = list_links(kg, INDEX, "Ada Lovelace")
    rejected = reject_link(kg, INDEX, link["link_id"], by=" reviewer ")
    assert rejected["state"] == "rejected" and rejected["by"] == "reviewer"
    assert rejected["a"] == link["a"] and rejected["entity"] == "ada lovelace"
    assert list_links(kg, INDEX, "Ada Lovelace") == []
    assert [x["entity"] for x in list_links(kg, INDEX)] == ["analytical engine"]
    again = reject_link(kg, INDEX, link["link_id"], by="someone else")
    assert again == {"link_id": link["link_id"], "state": "rejected", "by": "reviewer",
                     "rejected_at": rejected["rejected_at"]}


def test_bad_requests_name_what_is_wrong(kg: LocalClient) -> None:
    """An unknown index or link is not found; an index of another method, a blank
    entity name, a blank, overlong or unstorable ``by`` are input errors naming the
    field; nothing is recorded for a refused rejection."""
    (link, _) = list_links(kg, INDEX)
    with pytest.raises(NotFoundError, match="no index 'nothing'"):
        list_links(kg, "nothing")
    with pytest.raises(NotFoundError, match="no index 'nothing'"):
        reject_link(kg, "nothing", link["link_id"], by="reviewer")
    with pytest.raises(UnknownLinkError, match="no link 'feedbeef'"):
        reject_link(kg, INDEX, "feedbeef", by="reviewer")
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("links.list", lambda: list_links(kg, "plain")),
        ("links.reject", lambda: reject_link(kg, "plain", link["link_id"], by="reviewer"))]
    for operation, call in calls:
        with pytest.raises(InvalidInputError, match=(
                f"index 'plain' is built with 'extractive', which has no operation "
                f"'{operation}' \\(only kgbridge indexes do\\)")) as wrong:
            call()
        assert wrong.value.where == "method"
    with pytest.raises(InvalidInputError) as blank_entity:
        list_links(kg, INDEX, "   ")
    assert blank_entity.value.where == "entity"
    for by in ("  ", "x" * (MAX_BY_CHARS + 1), "bad\udcff"):
        with pytest.raises(InvalidInputError) as bad_by:
            reject_link(kg, INDEX, link["link_id"], by=by)
        assert bad_by.value.where == "by", by
    assert kg.service.backends.state.get_records(INDEX, REJECTED, [link["link_id"]]) == {}
    assert len(list_links(kg, INDEX)) == 2


def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "kg.jsonl"
    path.write_text("".join(json.dumps({"id": d.doc_id, "title": d.title, "text": d.text})
                            + "\n" for d in CORPUS))
    return path


def test_cli_lists_and_rejects_links(tmp_path: Path, start_server: StartServer) -> None:
    """`links list` prints a table naming each end with its document's title and the link
    id in full, or a JSON array; `links reject` records the OS user by default (--by
    overrides) and a second time says it was already rejected; an unknown link or
    index exits 66 (not found), an index of another method or a blank field 65 (bad
    input), with the reason."""
    server = start_server()
    env = {"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
           "HOPINDEX_LLM_MODEL": server.config.model, "HOPINDEX_LLM_BASE_URL": server.base_url,
           "HOPINDEX_LLM_API_KEY": "test-key",
           "HOPINDEX_EMBEDDER_URL": f"openai://{server.config.embedding_model}",
           "LOGNAME": "auditor"}
    cli = CliRunner(env=env)
    built = cli.invoke(main, ["ingest", "--index", INDEX, "--method", "kgbridge", "--quiet",
                              str(corpus_file(tmp_path))])
    assert built.exit_code == 0, built.output
    with Client.local(settings=llm_settings(tmp_path / "data", server,
                                            embedder_url=env["HOPINDEX_EMBEDDER_URL"])) as client:
        client.indexes.create_index("plain", "extractive")

    listed = cli.invoke(main, ["links", "list", "--index", INDEX, "--json"])
    assert listed.exit_code == 0, listed.output
    links = json.loads(listed.output)
    assert [x["entity"] for x in links] == sorted(LINKED_KEYS)
    table = cli.invoke(main, ["links", "list", "--index", INDEX])
    assert table.exit_code == 0, table.output
    for link in links:
        assert link["link_id"] in table.output
    assert "Ada Lovelace (Analytical Engine)" in table.output
    one = cli.invoke(main, ["links", "list", "--index", INDEX, "--entity", "ADA lovelace",
                            "--json"])
    assert [x["link_id"] for x in json.loads(one.output)] == [links[0]["link_id"]]
    none = cli.invoke(main, ["links", "list", "--index", INDEX, "--entity", "Nobody"])
    assert none.exit_code == 0 and "no links (entity 'Nobody')" in none.output

    rejected = cli.invoke(main, ["links", "reject", "--index", INDEX, "--link",
                                 links[0]["link_id"], "--json"])
    assert rejected.exit_code == 0, rejected.output
    assert json.loads(rejected.output)["by"] == "auditor"
    again = cli.invoke(main, ["links", "reject", "--index", INDEX, "--link",
                              links[0]["link_id"], "--by", "someone else"])
    assert again.exit_code == 0, again.output
    assert "already rejected by auditor" in again.output
    left = cli.invoke(main, ["links", "list", "--index", INDEX, "--json"])
    assert [x["entity"] for x in json.loads(left.output)] == ["analytical engine"]
    by = cli.invoke(main, ["links", "reject", "--index", INDEX, "--link",
                           links[1]["link_id"], "--by", "Grace"])
    assert by.exit_code == 0 and "by Grace" in by.output and "analytical engine" in by.output

    for args, code, message in (
            (["reject", "--index", INDEX, "--link", "feedbeef"], ExitCode.NOT_FOUND,
             "no link 'feedbeef'"),
            (["list", "--index", "nothing"], ExitCode.NOT_FOUND, "no index 'nothing'"),
            (["list", "--index", "plain"], ExitCode.DATA_ERROR,
             "built with 'extractive', which has no operation 'links.list'"),
            (["list", "--index", INDEX, "--entity", " "], ExitCode.DATA_ERROR,
             "entity: give an entity name"),
            (["reject", "--index", INDEX, "--link", links[1]["link_id"], "--by", " "],
             ExitCode.DATA_ERROR, "by: say who rejects the link")):
        refused = cli.invoke(main, ["links", *args])
        assert refused.exit_code == code, (args, refused.output)
        assert message in refused.output and "Traceback" not in refused.output


def test_links_print_as_aligned_columns_with_the_full_link_id() -> None:
    """The text shows a header, the full link id, both ends with their document's title
    (or id when untitled), the three scores and the reason, names and reasons as they
    are (no markup), each column starting where its header does; no links: a line
    saying so, naming the entity asked for."""
    link: dict[str, Any] = {
        "link_id": "d0fe0afdf96ee8eee123d2bce0212961", "entity": "ada lovelace",
        "a": {"doc_id": "ada", "unit_id": "u1", "name": "Ada Lovelace", "title": "Ada Lovelace"},
        "b": {"doc_id": "engine", "unit_id": "u2", "name": "Ada [bold]L[/bold]", "title": ""},
        "s_link": 0.91234, "s_emb": 0.8, "s_llm": 0.9, "reason": "Same [red]person[/red]."}
    other = {**link, "link_id": "e" * 32, "entity": "analytical engine", "s_link": 0.7,
             "reason": "Same machine."}
    header, first, second = render_links([link, other], {}).splitlines()
    assert header.split() == ["link", "entity", "a", "b", "s_link", "s_emb", "s_llm",
                              "reason"]
    assert first.startswith(link["link_id"] + "  ")
    assert "Ada Lovelace (Ada Lovelace)" in first
    assert "Ada [bold]L[/bold] (engine)" in first and first.endswith("Same [red]person[/red].")
    assert all(score in first for score in ("0.912", "0.800", "0.900"))
    assert first.index("ada lovelace") == header.index("entity") == second.index("analytical")
    assert first.index("Same [red]") == header.index("reason") == second.index("Same machine")
    assert render_links([], {"entity": " Nobody "}) == "no links (entity 'Nobody')"
    assert render_links([], {}) == "no links"
