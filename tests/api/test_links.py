"""Auditing a kgbridge index's SAME_AS links through the service and the local CLI:
``list_links`` / ``reject_link`` and ``hopindex links list`` / ``hopindex links
reject``, on indexes built against the local LLM test server."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.api.links import MAX_BY_CHARS, NoLinksError
from hopindex.api.render_links import TABLE_MIN_WIDTH, render_links
from hopindex.api.service import Hopindex
from hopindex.core.errors import InvalidInputError, NotFoundError
from hopindex.methods.kgbridge.links import REJECTED, UnknownLinkError
from hopindex.scheduler.submit import ensure_index
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import (  # noqa: F401  # make_llm_service: a fixture
    LlmServiceFactory,
    llm_settings,
    make_llm_service,
)
from tests.methods.kgbridge.corpus import CORPUS, INDEX, LINKED_KEYS, kg_service

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
TITLES = {doc.doc_id: doc.title for doc in CORPUS}


@pytest.fixture
def kg(start_server: StartServer, make_llm_service: LlmServiceFactory) -> Hopindex:  # noqa: F811
    """A service holding the kgbridge corpus in INDEX, and an empty extractive index."""
    service = kg_service(make_llm_service, start_server())
    service.ingest_documents(INDEX, CORPUS, method="kgbridge")
    ensure_index(service.runtime, "plain", "extractive")
    return service


def test_links_are_listed_with_their_documents_titles(kg: Hopindex) -> None:
    """Every link, by entity, each end carrying its document's title; one name's links
    whatever its case and spacing; none for a name nobody links."""
    every = kg.list_links(INDEX)
    assert [link["entity"] for link in every] == sorted(LINKED_KEYS)
    for link in every:
        for end in (link["a"], link["b"]):
            assert end["title"] == TITLES[end["doc_id"]]
        assert link["state"] == "linked" and link["reason"]
        # Both names are in the same two documents, "ada" and "engine".
        assert {link["a"]["doc_id"], link["b"]["doc_id"]} == {"ada", "engine"}
    assert kg.list_links(INDEX, " analytical   ENGINE ") == [every[1]]
    assert kg.list_links(INDEX, "Nobody At All") == []


def test_a_rejected_link_is_gone_and_a_second_rejection_keeps_the_first(
        kg: Hopindex) -> None:
    """Rejecting returns the link with who rejected it and when; it leaves the listing at
    once; rejecting it again returns the first rejection, unchanged."""
    (link,) = kg.list_links(INDEX, "Ada Lovelace")
    rejected = kg.reject_link(INDEX, link["link_id"], by=" reviewer ")
    assert rejected["state"] == "rejected" and rejected["by"] == "reviewer"
    assert rejected["a"] == link["a"] and rejected["entity"] == "ada lovelace"
    assert kg.list_links(INDEX, "Ada Lovelace") == []
    assert [x["entity"] for x in kg.list_links(INDEX)] == ["analytical engine"]
    again = kg.reject_link(INDEX, link["link_id"], by="someone else")
    assert again == {"link_id": link["link_id"], "state": "rejected", "by": "reviewer",
                     "rejected_at": rejected["rejected_at"]}


def test_bad_requests_name_what_is_wrong(kg: Hopindex) -> None:
    """An unknown index or link is not found; an index of another method, a blank
    entity name, a blank, overlong or unstorable ``by`` are input errors naming the
    field; nothing is recorded for a refused rejection."""
    (link, _) = kg.list_links(INDEX)
    with pytest.raises(NotFoundError, match="no index 'nothing'"):
        kg.list_links("nothing")
    with pytest.raises(NotFoundError, match="no index 'nothing'"):
        kg.reject_link("nothing", link["link_id"], by="reviewer")
    with pytest.raises(UnknownLinkError, match="no link 'feedbeef'"):
        kg.reject_link(INDEX, "feedbeef", by="reviewer")
    for call in (lambda: kg.list_links("plain"),
                 lambda: kg.reject_link("plain", link["link_id"], by="reviewer")):
        with pytest.raises(NoLinksError, match="index 'plain' is built with 'extractive', "
                                               "which keeps no SAME_AS links") as wrong:
            call()
        assert wrong.value.where == "method"
    with pytest.raises(InvalidInputError) as blank_entity:
        kg.list_links(INDEX, "   ")
    assert blank_entity.value.where == "entity"
    for by in ("  ", "x" * (MAX_BY_CHARS + 1), "bad\udcff"):
        with pytest.raises(InvalidInputError) as bad_by:
            kg.reject_link(INDEX, link["link_id"], by=by)
        assert bad_by.value.where == "by", by
    assert kg.backends.state.get_records(INDEX, REJECTED, [link["link_id"]]) == {}
    assert len(kg.list_links(INDEX)) == 2


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
    with Hopindex(llm_settings(tmp_path / "data", server,
                               embedder_url=env["HOPINDEX_EMBEDDER_URL"])) as service:
        ensure_index(service.runtime, "plain", "extractive")

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
    assert none.exit_code == 0 and "no links (index kg, entity 'Nobody')" in none.output

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
             "built with 'extractive', which keeps no SAME_AS"),
            (["list", "--index", INDEX, "--entity", " "], ExitCode.DATA_ERROR,
             "entity: give an entity name"),
            (["reject", "--index", INDEX, "--link", links[1]["link_id"], "--by", " "],
             ExitCode.DATA_ERROR, "by: say who rejects the link")):
        refused = cli.invoke(main, ["links", *args])
        assert refused.exit_code == code, (args, refused.output)
        assert message in refused.output and "Traceback" not in refused.output


def test_links_print_as_a_table_on_a_wide_console_and_as_lines_on_a_narrow_one() -> None:
    """Both layouts show the full link id (the narrowest table too), both ends with
    their document's title (or id when untitled), the three scores and the reason, and
    print names and reasons as text, not rich markup."""
    link = {"link_id": "d0fe0afdf96ee8eee123d2bce0212961", "entity": "ada lovelace",
            "a": {"doc_id": "ada", "unit_id": "u1", "name": "Ada Lovelace",
                  "title": "Ada Lovelace"},
            "b": {"doc_id": "engine", "unit_id": "u2", "name": "Ada [bold]L[/bold]",
                  "title": ""},
            "s_link": 0.91234, "s_emb": 0.8, "s_llm": 0.9, "reason": "Same [red]person[/red]."}
    for width in (80, TABLE_MIN_WIDTH, 200):
        out = Console(width=width, file=io.StringIO())
        render_links(out, [link])
        shown = out.file.getvalue()  # type: ignore[attr-defined]
        assert link["link_id"] in shown
        if width == TABLE_MIN_WIDTH:  # the narrowest table: the other cells may wrap
            continue
        assert "Ada Lovelace (Ada Lovelace)" in shown
        assert "Ada [bold]L[/bold] (engine)" in shown and "Same [red]person[/red]." in shown
        assert all(score in shown for score in ("0.912", "0.800", "0.900"))
        # The table has a header row; the narrow layout names each score instead.
        assert ("s_link 0.912" in shown) is (width < TABLE_MIN_WIDTH)
