"""The CLI in remote mode (``hopindex --api URL`` / HOPINDEX_API_URL) against a real server
on loopback: the same commands, the same output, the same exit codes, with the work
done by the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.client.http_wire import parse_sse, uploads_for
from hopindex.api.client.local import LocalClient
from hopindex.api.exit_codes import ExitCode
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.errors import InvalidInputError
from hopindex.core.settings import Settings
from tests.conftest import CURIE_CORPUS, local_client

pytestmark = pytest.mark.integration

KEY = "remote-key-0123456789abcdef"


@dataclass(frozen=True)
class Served:
    """A server, and a client of the service it serves (the server's own answers)."""

    client: LocalClient
    url: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("remote") / "data").resolved()
    with local_client(settings) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as running:
        yield Served(client, running.url)


@pytest.fixture
def cli(server: Served, tmp_path: Path) -> CliRunner:
    # A local data dir that must stay unused: remote mode opens no backend.
    return CliRunner(env={"HOPINDEX_API_URL": server.url, "HOPINDEX_API_KEY": KEY,
                          "HOPINDEX_DATA_DIR": str(tmp_path / "local")})


def corpus(tmp_path: Path, bad_line: bool = False) -> Path:
    path = tmp_path / "curie.jsonl"
    lines = [json.dumps({"id": f"d{i}", "title": d.title, "text": d.text})
             for i, d in enumerate(CURIE_CORPUS)]
    path.write_text("\n".join(lines + (["{oops"] if bad_line else [])) + "\n")
    return path


def test_remote_round_trip_matches_the_server(cli: CliRunner, server: Served,
                                              tmp_path: Path) -> None:
    """ingest (a bad line: exit 3 naming file and line) → query --json equal to the
    server's own answer → jobs → events → delete, all through the API, and no local
    data dir is created."""
    ingested = cli.invoke(main, ["ingest", "--index", "curie", "--json",
                                 str(corpus(tmp_path, bad_line=True))])
    assert ingested.exit_code == 3, ingested.output
    job = json.loads(ingested.output)
    assert job["state"] == "succeeded"
    assert job["counts"]["extractive.stage1"]["done"] == len(CURIE_CORPUS)
    assert [e["where"] for e in job["errors"]] == [f"curie.jsonl:{len(CURIE_CORPUS) + 1}"]

    answered = cli.invoke(main, ["query", "--index", "curie", "--json", "--k", "3",
                                 "Where was Marie Curie born?"])
    assert answered.exit_code == 0, answered.output
    remote = json.loads(answered.output)
    local = server.client.query("curie", "Where was Marie Curie born?", k=3).as_dict()
    assert remote["passages"] == local["passages"] and remote["method"] == local["method"]
    shown = cli.invoke(main, ["query", "--index", "curie", "Where was Marie Curie born?"])
    assert shown.exit_code == 0 and "Warsaw" in shown.output

    listed = cli.invoke(main, ["jobs"])
    assert job["job_id"] in listed.output
    one = cli.invoke(main, ["jobs", job["job_id"]])
    assert one.exit_code == 0 and "stage1" in one.output and "curie.jsonl" in one.output

    events = cli.invoke(main, ["events", "--index", "curie", "--json"])
    assert events.exit_code == 0, events.output
    types = [json.loads(line)["type"] for line in events.output.splitlines()]
    assert types[0] == "job.started" and types[-1] == "index.ready"
    first = json.loads(events.output.splitlines()[0])["id"]
    after = cli.invoke(main, ["events", "--index", "curie", "--from", first, "--json"])
    assert len(after.output.splitlines()) == len(types) - 1

    deleted = cli.invoke(main, ["delete", "--index", "curie", "--json", "d0"])
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.output)["state"] == "succeeded"
    again = cli.invoke(main, ["query", "--index", "curie", "--json", "--k", "5", "Marie Curie"])
    assert "d0" not in {p["doc_id"] for p in json.loads(again.output)["passages"]}
    assert not (tmp_path / "local").exists()


def test_remote_folders_webhooks_and_errors(cli: CliRunner, server: Served,
                                            tmp_path: Path) -> None:
    """A folder uploads with its relative names (text ids match local ingest);
    webhooks add/list/remove; `rebuild --check` shows the index has no trees built on
    request; removing a webhook twice, `rebuild` of that index, a finished job's
    cancel, an unknown index, a wrong key and an unreachable server each exit with
    their own code (66, 65, 65, 66, 77, 69) and the reason, as the same errors do
    locally."""
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "a.md").write_text("Ada Lovelace wrote about the Analytical Engine.")
    (notes / "sub" / "b.txt").write_text("Charles Babbage designed the Analytical Engine.")
    (notes / ".hidden").write_text("skipped")
    ingested = cli.invoke(main, ["ingest", "--index", "notes", "--json", str(notes)])
    assert ingested.exit_code == 0, ingested.output
    docs = server.client.service.backends.state.get_documents("notes", ["a.md", "sub/b.txt"])
    assert sorted(d.doc_id for d in docs) == ["a.md", "sub/b.txt"]

    added = cli.invoke(main, ["webhooks", "add", "--index", "notes", "https://example.org/h"])
    assert added.exit_code == 0, added.output
    hook = json.loads(added.output)
    assert set(hook) == {"id", "index", "url", "secret"}
    assert hook["id"] in cli.invoke(main, ["webhooks", "list"]).output
    assert cli.invoke(main, ["webhooks", "remove", hook["id"]]).exit_code == 0
    assert cli.invoke(main, ["webhooks", "remove", hook["id"]]).exit_code == ExitCode.NOT_FOUND

    checked = cli.invoke(main, ["rebuild", "--index", "notes", "--check", "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["levels"] == []
    refused = cli.invoke(main, ["rebuild", "--index", "notes"])
    assert refused.exit_code == ExitCode.DATA_ERROR and "nothing to rebuild" in refused.output
    job_id = json.loads(ingested.output)["job_id"]
    cancel = cli.invoke(main, ["jobs", "cancel", job_id])
    assert cancel.exit_code == ExitCode.DATA_ERROR and "already succeeded" in cancel.output
    missing = cli.invoke(main, ["query", "--index", "nothing", "q"])
    assert missing.exit_code == ExitCode.NOT_FOUND and "no index 'nothing'" in missing.output
    wrong = CliRunner(env={"HOPINDEX_API_KEY": "wrong-key-0123456789abcdef"}).invoke(
        main, ["--api", server.url, "jobs"])
    assert wrong.exit_code == ExitCode.NO_PERMISSION and "not valid" in wrong.output
    down = CliRunner().invoke(main, ["--api", "http://127.0.0.1:1", "jobs"])
    assert down.exit_code == ExitCode.UNAVAILABLE
    assert "cannot reach the hopindex API" in down.output


def test_upload_names_and_sse_parsing(tmp_path: Path) -> None:
    """Clashing upload names are refused before sending; the SSE parser skips comments
    and retry lines and reads multi-line data."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.jsonl").write_text("{}")
    (tmp_path / "b" / "x.jsonl").write_text("{}")
    with pytest.raises(InvalidInputError, match=r"two inputs are named 'x\.jsonl'"):
        uploads_for([tmp_path / "a", tmp_path / "b"])
    event = {"id": "7", "type": "index.ready", "index": "i", "job_id": "j", "data": {},
             "created_at": 1.0}
    text = json.dumps(event)
    body = [b"retry: 2000\n", b": keep-alive\n", b"\n", b"id: 7\n", b"event: index.ready\n",
            f"data: {text[:10]}\n".encode(), f"data: {text[10:]}\n".encode(), b"\n"]
    parsed = list(parse_sse(body))
    assert [e.event_id for e in parsed] == ["7"]
