"""Levels phases built only on request: the first job builds the tree, later jobs leave
it stale and say how stale on the index record, a rebuild job (or enough changed
documents) builds it again, and a repair finishes a partial tree without rebuilding
it. Run in-process with the test plugin's ``lazy_sentences`` method (its tree is
``Rebuild.ON_REQUEST``); tests/workers/test_plugin_workers.py runs it on workers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.errors import IndexBusyError, InvalidInputError
from hopindex.core.models import Job, JobKind, JobState
from hopindex.methods.plugin import LevelsPhase, Rebuild, Scope
from hopindex.readers import RawDocument, ReadResult
from hopindex.scheduler.level_builds import (
    NAMESPACE,
    BuildMode,
    BuildState,
    LevelBuild,
    decide_build,
    finish_build,
    read_build,
)
from hopindex.scheduler.outstanding import IndexStatus
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import raw
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture
from tests.plugin_method.method import FAIL_TREE_VARIABLE, build_tree, plan_tree

INDEX = "lazy"
TREE = "lazy_sentences.tree"
CORPUS = [
    raw("Alpha", "Paris is in France. The city is old.", doc_id="a"),
    raw("Beta", "The river is the Seine. Paris lies on it.", doc_id="b"),
    raw("Gamma", "Rivers flow. The sea is far.", doc_id="c"),
]
FIRST_TREE = {"Paris is in France. The river is the Seine.", "Rivers flow.",
              "Paris is in France. The river is the Seine. Rivers flow."}
CHANGED_B = raw("Beta", "The river is the Marne. Paris lies on it.", doc_id="b")
CHANGED_C = raw("Gamma", "Lakes are still. The sea is far.", doc_id="c")


def _client(tmp_path: Path, server: LlmTestServer, **method_env: str) -> LocalClient:
    return local_client(llm_settings(tmp_path / "data", server,
                                     embedder_url=f"openai://{server.config.embedding_model}",
                                     method_env=method_env))


def _ingest(client: LocalClient, documents: list[RawDocument],
            state: JobState = JobState.SUCCEEDED) -> Job:
    job = client.ingest_read(INDEX, ReadResult(documents=documents), method="lazy_sentences")
    assert job.state is state, (job.reason, job.errors)
    return job


def _tree(client: LocalClient) -> set[str]:
    """The texts of the tree's units (summaries), read through the tree's groups."""
    state = client.service.backends.state
    groups = state.get_groups(INDEX, "tree", state.list_group_keys(INDEX, "tree"))
    unit_ids = [u for g in groups.values() for u in g.unit_ids]
    return {u.text for u in state.get_units(INDEX, unit_ids)}


def _level(client: LocalClient) -> dict[str, Any]:
    described = client.service.outstanding(INDEX).as_dict()
    [level] = described["levels"]
    assert level["phase"] == TREE
    return level


pytestmark = [pytest.mark.usefixtures("sentences_plugin")]


def test_a_document_changed_then_deleted_counts_once_as_deleted() -> None:
    """The record keeps a document in one list, the latest change deciding which, and
    says when nothing new was noted (no write needed); it survives its JSON form."""
    build = LevelBuild(phase=TREE, built_at=1.0, changed=["a"])
    assert build.note_changes(["b"], ["a"])
    assert (build.changed, build.deleted) == (["b"], ["a"])
    assert not build.note_changes(["b"], ["a"])
    assert build.note_changes(["a"], [])
    assert (build.changed, build.deleted, build.since) == (["a", "b"], [], {"a", "b"})
    assert LevelBuild.from_record(TREE, build.as_record()) == build
    assert LevelBuild.from_record(TREE, None) == LevelBuild(phase=TREE)


def test_decisions_are_idempotent_under_redelivered_messages(tmp_path: Path) -> None:
    """A job's level-0 decision repeats itself when its message comes again: a build
    claimed stays this job's, a skip notes the same documents once, and a build the job
    finished is not started again; finishing a build twice, or from another job,
    changes nothing. A job meeting a build another running job holds skips it, and its
    documents stay changed after that build ends."""
    state = SqliteStateStore(tmp_path / "state.db")
    state.create_index(IndexInfo(name=INDEX, method="lazy_sentences", created_at=0.0))
    phase = LevelsPhase(name="tree", namespace="tree", plan=plan_tree, build=build_tree,
                        rebuild=Rebuild.ON_REQUEST)
    for job_id in ("j1", "j2", "j3"):
        state.create_job(Job(job_id=job_id, index=INDEX, kind=JobKind.INGEST,
                             state=JobState.RUNNING))

    def decide(job_id: str, *doc_ids: str) -> BuildMode:
        return decide_build(state, INDEX, job_id, phase, qualified=TREE,
                            scope=Scope(doc_ids=list(doc_ids)), settings=None)

    assert decide("j1", "a") is decide("j1", "a") is BuildMode.BUILD  # never built
    assert decide("j2", "b") is decide("j2", "b") is BuildMode.SKIP  # j1 builds it now
    assert read_build(state, INDEX, TREE).changed == ["a", "b"]
    finish_build(state, INDEX, "j2", TREE)
    assert read_build(state, INDEX, TREE).building == "j1"
    finish_build(state, INDEX, "j1", TREE)
    done = read_build(state, INDEX, TREE)
    finish_build(state, INDEX, "j1", TREE)
    assert read_build(state, INDEX, TREE) == done
    assert (done.job_id, done.building, done.changed) == ("j1", "", ["b"])
    assert decide("j1", "a") is BuildMode.SKIP  # late: j1 built it already
    assert decide("j3") is BuildMode.SKIP
    assert read_build(state, INDEX, TREE) == done
    state.close()


@pytest.mark.integration
def test_the_tree_is_built_once_left_stale_then_rebuilt_on_request(
        tmp_path: Path, server: LlmTestServer) -> None:
    """The first ingest builds the tree; a second ingest changing one document leaves the
    tree as it was (the record says stale, 1 document changed, a third); a rebuild job
    builds it over the change and the record reads current, built by that job."""
    with _client(tmp_path, server) as client:
        first = _ingest(client, CORPUS)
        assert first.count(TREE).done == 3
        assert _tree(client) == FIRST_TREE
        level = _level(client)
        assert (level["state"], level["stale"], level["built_by"]) == (
            "current", False, first.job_id)
        assert level["documents_at_build"] == 3 and level["rebuild_share"] == 0.0

        second = _ingest(client, [*CORPUS[:1], CHANGED_B, *CORPUS[2:]])
        assert TREE not in second.counts and second.count("lazy_sentences.sentences").done == 1
        assert _tree(client) == FIRST_TREE
        level = _level(client)
        assert (level["state"], level["stale"], level["changed_since_build"]) == (
            "stale", True, 1)
        assert level["changed_share"] == pytest.approx(1 / 3, abs=1e-4)
        assert client.service.outstanding(INDEX).status is IndexStatus.READY

        rebuilt = client.indexes.rebuild_index(INDEX)
        assert (rebuilt.kind, rebuilt.state) == (JobKind.REBUILD, JobState.SUCCEEDED)
        assert rebuilt.count("lazy_sentences.sentences").total == 0
        assert _tree(client) == {"Paris is in France. The river is the Marne.",
                                  "Rivers flow.",
                                  "Paris is in France. The river is the Marne. Rivers flow."}
        level = _level(client)
        assert (level["state"], level["stale"], level["changed_since_build"],
                level["built_by"]) == ("current", False, 0, rebuilt.job_id)


@pytest.mark.integration
def test_the_share_setting_rebuilds_automatically(
        tmp_path: Path, server: LlmTestServer) -> None:
    """With HOPINDEX_LAZY_SENTENCES_REBUILD_SHARE=0.5, one changed document of three
    leaves the tree stale; the ingest that brings the changed share to two thirds
    rebuilds it with both changes."""
    with _client(tmp_path, server, HOPINDEX_LAZY_SENTENCES_REBUILD_SHARE="0.5") as client:
        _ingest(client, CORPUS)
        _ingest(client, [*CORPUS[:1], CHANGED_B, *CORPUS[2:]])
        assert _tree(client) == FIRST_TREE
        assert _level(client)["rebuild_share"] == 0.5
        third = _ingest(client, [*CORPUS[:1], CHANGED_B, CHANGED_C])
        assert third.count(TREE).done == 3
        assert _tree(client) == {"Paris is in France. The river is the Marne.",
                                  "Lakes are still.",
                                  "Paris is in France. The river is the Marne. "
                                  "Lakes are still."}
        level = _level(client)
        assert (level["state"], level["built_by"]) == ("current", third.job_id)


@pytest.mark.integration
def test_a_delete_marks_the_tree_stale_until_a_rebuild(
        tmp_path: Path, server: LlmTestServer) -> None:
    """Deleting c drops its passages at once but leaves the tree (its node still cites
    c) and counts c as changed since the build; the rebuild removes c's node and roots
    the tree over the one node left."""
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        deleted = client.delete_documents(INDEX, ["c"])
        assert deleted.state is JobState.SUCCEEDED, deleted.reason
        assert _tree(client) == FIRST_TREE
        level = _level(client)
        assert (level["state"], level["changed_since_build"]) == ("stale", 1)
        assert level["changed_share"] == 0.5  # of the two documents left
        client.indexes.rebuild_index(INDEX)
        assert _tree(client) == {"Paris is in France. The river is the Seine."}
        assert _level(client)["state"] == "current"


@pytest.mark.integration
def test_a_repair_finishes_a_partial_tree_without_rebuilding_it(
        tmp_path: Path, server: LlmTestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The root fails for good in the first build, and again in an ingest that changes b
    (the root is a failed item of level 1: every job plans it, without rebuilding the
    tree). Once it can be built, a repair builds the root over the nodes as they are:
    the (a, b) node keeps b's old text and the tree stays stale by b."""
    monkeypatch.setenv(FAIL_TREE_VARIABLE, "root")
    with _client(tmp_path, server) as client:
        first = _ingest(client, CORPUS, JobState.SUCCEEDED_WITH_ERRORS)
        assert [e.item for e in first.errors] == ["root"]
        assert client.service.outstanding(INDEX).failed_per_phase() == {f"{TREE}@1": 1}
        second = _ingest(client, [*CORPUS[:1], CHANGED_B, *CORPUS[2:]],
                         JobState.SUCCEEDED_WITH_ERRORS)
        assert second.count(TREE).failed == 1 and second.count(TREE).total == 1
        monkeypatch.delenv(FAIL_TREE_VARIABLE)
        repair = client.indexes.repair_index(INDEX)
        assert repair.state is JobState.SUCCEEDED, repair.errors
        assert repair.count(TREE).done == 1
        assert _tree(client) == FIRST_TREE
        work = client.service.outstanding(INDEX)
        assert work.status is IndexStatus.READY
        assert (work.levels[0].state, work.levels[0].changed_since) == (BuildState.STALE, 1)


@pytest.mark.integration
def test_finishing_a_failed_node_plans_nothing_else(
        tmp_path: Path, server: LlmTestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The (a, b) node fails in the first build, so the root covers c alone. The next
    ingest, changing b below the share, builds exactly that node again (from the
    documents as they are now) and asks the planner for nothing: the root is not
    re-planned, and b stays counted as changed since the build. The rebuild brings the
    node into the root."""
    monkeypatch.setenv(FAIL_TREE_VARIABLE, "pair:a|b")
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS, JobState.SUCCEEDED_WITH_ERRORS)
        assert _tree(client) == {"Rivers flow."}  # the (c) node, and the root over it
        monkeypatch.delenv(FAIL_TREE_VARIABLE)
        _ingest(client, [*CORPUS[:1], CHANGED_B, *CORPUS[2:]])
        assert _tree(client) == {"Paris is in France. The river is the Marne.", "Rivers flow."}
        assert (_level(client)["state"], _level(client)["changed_since_build"]) == (
            "stale", 1)
        assert client.service.outstanding(INDEX).failed == []
        client.indexes.rebuild_index(INDEX)
        assert _tree(client) == {"Paris is in France. The river is the Marne.",
                                  "Rivers flow.",
                                  "Paris is in France. The river is the Marne. Rivers flow."}


@pytest.mark.integration
def test_an_interrupted_build_makes_the_index_partial_and_the_next_job_builds_it(
        tmp_path: Path, server: LlmTestServer) -> None:
    """A build whose job ended before it finished (here: a job that no longer exists)
    reads interrupted and the index partial; a repair builds the tree whole again."""
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        state = client.service.backends.state
        record = state.get_records(INDEX, NAMESPACE, [TREE])[TREE]
        state.put_records(INDEX, NAMESPACE, {TREE: {**record, "building": "gone-job"}})
        work = client.service.outstanding(INDEX)
        assert work.status is IndexStatus.PARTIAL and work.interrupted_levels == [TREE]
        repair = client.indexes.repair_index(INDEX)
        assert repair.count(TREE).done == 3
        assert _level(client)["state"] == "current"
        assert client.service.outstanding(INDEX).status is IndexStatus.READY


@pytest.mark.integration
def test_a_rebuild_is_refused_for_a_method_without_trees_and_on_a_busy_index(
        tmp_path: Path, server: LlmTestServer) -> None:
    """An index whose method builds everything every job gets a clear input error
    naming its method; behind a running job a rebuild that may not wait is refused,
    naming that job, and leaves no job record."""
    with _client(tmp_path, server) as client:
        client.ingest_read("eager", ReadResult(documents=CORPUS), method="sentences")
        with pytest.raises(InvalidInputError, match=r"built with 'sentences'.*nothing to "
                                                    r"rebuild"):
            client.indexes.rebuild_index("eager")
        assert client.service.outstanding("eager").levels == []
        _ingest(client, CORPUS)
        state = client.service.backends.state
        state.create_job(Job(job_id="running-job", index=INDEX, kind=JobKind.INGEST,
                             state=JobState.RUNNING, started_at=time.time()))
        with pytest.raises(IndexBusyError, match="running-job"):
            client.indexes.rebuild_index(INDEX, wait=False)
        kinds = [j.kind for j in client.jobs.list_jobs(INDEX)]
        assert JobKind.REBUILD not in kinds
