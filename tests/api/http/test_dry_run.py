"""``POST /v1/indexes/{name}/documents?dry_run=true`` on a real server with the local
test LLM: 200 with the plan the spec describes, no LLM request, no job, no index, for
a read key too; a bad value is a 400 naming the parameter; the plan's stage-1 calls
are the ingest's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import KEYS, Api, ApiFactory, llm_settings_of, sample_documents

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(make_api: ApiFactory, llm: LlmTestServer) -> Api:
    return make_api(**llm_settings_of(llm))


def test_dry_run_answers_the_plan_and_writes_nothing(api: Api, llm: LlmTestServer) -> None:
    """A dry run into a new index answers 200 with an IngestPlan (checked against the
    spec), sends the LLM nothing and creates no index and no job; the ingest that
    follows sends exactly the planned stage-1 calls, and its job view shows the same
    figure as its estimate."""
    _, docs = sample_documents(limit=4)
    chats = llm.stats.count(Endpoint.CHAT)
    planned = api.call("POST", "/v1/indexes/dry/documents",
                       params={"method": "indexrag", "dry_run": "true"}, json=docs)
    assert planned.status_code == 200, planned.text
    plan = planned.json()
    assert plan["documents"] == {"new": 4, "changed": 0, "unchanged": 0, "invalid": 0,
                                 "removed": 0}
    stage1 = plan["phases"][0]
    assert (stage1["phase"], stage1["planning"]) == ("indexrag.stage1", "exact")
    assert llm.stats.count(Endpoint.CHAT) == chats
    assert api.call("GET", "/v1/indexes/dry", check=False).status_code == 404
    assert api.service.list_jobs("dry") == []
    job = api.call("POST", "/v1/indexes/dry/documents", params={"method": "indexrag"},
                   json=docs)
    assert job.status_code == 202, job.text
    done = api.wait_job(job.json()["job_id"])
    assert done["llm"]["stages"]["indexrag.stage1"]["calls"] == stage1["calls"]
    # The job view (checked against the spec's Job) carries the plan made at submit.
    assert done["estimate"]["indexrag.stage1"]["calls"] == stage1["calls"]


def test_a_read_key_may_dry_run_but_not_ingest(api: Api, llm: LlmTestServer,
                                               tmp_path: Path) -> None:
    """A read-only key gets the plan of a dry run, through the API and through
    ``hopindex --api … ingest --dry-run``, and a 403 for the ingest itself; nothing is
    sent to the LLM and no index or job is made."""
    _, docs = sample_documents(limit=2)
    chats = llm.stats.count(Endpoint.CHAT)
    planned = api.call("POST", "/v1/indexes/readers/documents", key="read",
                       params={"dry_run": "true"}, json=docs)
    assert planned.status_code == 200, planned.text
    assert planned.json()["documents"]["new"] == 2
    refused = api.call("POST", "/v1/indexes/readers/documents", key="read", json=docs)
    assert refused.status_code == 403 and "write access" in refused.json()["error"]["message"]
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    cli = CliRunner(env={"HOPINDEX_API_URL": api.url, "HOPINDEX_API_KEY": KEYS["read"],
                         "HOPINDEX_DATA_DIR": str(tmp_path / "unused")})
    shown = cli.invoke(main, ["ingest", "--index", "readers", "--dry-run", "--json",
                              str(corpus)])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["documents"]["new"] == 2
    ingest = cli.invoke(main, ["ingest", "--index", "readers", "--json", str(corpus)])
    assert ingest.exit_code == ExitCode.NO_PERMISSION, ingest.output
    assert llm.stats.count(Endpoint.CHAT) == chats
    assert api.call("GET", "/v1/indexes/readers", check=False).status_code == 404
    assert api.service.list_jobs("readers") == []


def test_a_bad_dry_run_value_names_the_parameter(api: Api, llm: LlmTestServer) -> None:
    """``dry_run=yes`` is a 400 naming ``dry_run``, and nothing is planned or sent."""
    _, docs = sample_documents(limit=2)
    chats = llm.stats.count(Endpoint.CHAT)
    refused = api.call("POST", "/v1/indexes/dry2/documents", params={"dry_run": "yes"},
                       json=docs)
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "dry_run"
    assert llm.stats.count(Endpoint.CHAT) == chats


def test_a_dry_run_asking_another_method_names_the_field(api: Api) -> None:
    """Asking a dry run of an index for a method it was not built with is a 400 on
    ``method``, as the ingest is."""
    _, docs = sample_documents(limit=1)
    job = api.call("POST", "/v1/indexes/built/documents", params={"method": "indexrag"},
                   json=docs)
    assert api.wait_job(job.json()["job_id"])["state"] == "succeeded"
    refused = api.call("POST", "/v1/indexes/built/documents",
                       params={"method": "extractive", "dry_run": "true"}, json=docs)
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "method"
