"""A third-party index method, found through the ``hopindex.methods`` entry points, is
registered, configured and run by the runtime like a built-in one (in-process here;
tests/workers/test_plugin_workers.py runs it on worker processes)."""

from __future__ import annotations

from collections import Counter
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.models import Job, JobState, Unit
from hopindex.methods import registry
from hopindex.readers import RawDocument
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import ingest_documents, llm_settings, local_client, raw
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture

with_plugin = pytest.mark.usefixtures("sentences_plugin")

INDEX = "plugin"
PHASES = {"sentences.sentences": "documents", "sentences.words": "groups",
          "sentences.tree": "levels"}

CORPUS = [
    raw("Alpha", "Paris is in France. The city is old. Paris has a river.", doc_id="a"),
    raw("Beta", "The river is the Seine. Paris lies on it.", doc_id="b"),
    raw("Gamma", "rivers flow. The sea is far.", doc_id="c"),
]
PASSAGES = {("passage", t) for t in (
    "Paris is in France.", "The city is old.", "Paris has a river.",
    "The river is the Seine.", "Paris lies on it.", "rivers flow.", "The sea is far.")}
# Pairs of sorted ids: (a, b) and (c); the root joins both nodes in key order.
TREE = {("summary", "Paris is in France. The river is the Seine."),
        ("summary", "rivers flow."),
        ("summary", "Paris is in France. The river is the Seine. rivers flow.")}
WORDS = {("proposition_aggregate", "Paris is in France. Paris has a river. Paris lies on it."),
         ("proposition_aggregate", "The city is old. The river is the Seine. The sea is far.")}


def _client(tmp_path: Path, server: LlmTestServer, name: str = "data",
            **overrides: object) -> LocalClient:
    """Embeddings from the test server; the method itself calls no LLM."""
    return local_client(llm_settings(tmp_path / name, server,
                                     embedder_url=f"openai://{server.config.embedding_model}",
                                     **overrides))


def _units(client: LocalClient) -> list[Unit]:
    state = client.service.backends.state
    return state.units_of_documents(INDEX, sorted(state.document_hashes(INDEX)))


def _kinds_and_texts(client: LocalClient) -> Counter[tuple[str, str]]:
    return Counter((u.kind.value, u.text) for u in _units(client))


def _ingest(client: LocalClient, documents: list[RawDocument]) -> Job:
    job = ingest_documents(client, INDEX, documents, method="sentences")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert not job.errors
    return job


@with_plugin
def test_the_entry_point_registers_the_method_and_its_query() -> None:
    """The installed distribution's entry point is visible to importlib.metadata, and
    the registry built from it knows the index method, its query method, its default
    query, the query methods that can read it, and its settings variable."""
    found = {e.name: e.value for e in entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert found.get("sentences") == "tests.plugin_method:register"
    assert "sentences" in registry.index_method_names()
    assert "sentences_naive" in registry.query_method_names()
    assert registry.default_query("sentences") == "sentences_naive"
    fitting = registry.fitting_queries("sentences")
    assert {"naive", "sentences_naive"} <= set(fitting)
    assert "indexrag" not in fitting  # reads AKUs and bridges, which sentences never writes
    assert registry.method_variables()["HOPINDEX_SENTENCES_MAX_GROUP_SIZE"][0] == "sentences"


def test_without_the_distribution_the_method_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing but the entry point brings the method in: a registry filled without the
    distribution on the path refuses the name, listing the methods it knows."""
    monkeypatch.setattr(registry, "_registry", None)
    assert "sentences" not in registry.index_method_names()
    with pytest.raises(InvalidInputError, match="unknown index method 'sentences'"):
        registry.get_index_method("sentences")


@with_plugin
def test_the_method_settings_come_from_its_variables() -> None:
    """HOPINDEX_SENTENCES_MAX_GROUP_SIZE is parsed into the plugin's settings dataclass;
    a misspelt variable and a bad value are refused, naming the variable."""
    settings = registry.load_settings({"HOPINDEX_SENTENCES_MAX_GROUP_SIZE": "2"})
    assert registry.method_settings(settings, "sentences").max_group_size == 2
    assert registry.method_settings(None, "sentences").max_group_size == 4
    with pytest.raises(ConfigError, match="HOPINDEX_SENTENCES_MAX_GROUP_SIZE"):
        registry.load_settings({"HOPINDEX_SENTENCES_MAX_GROUP_SIZ": "2"})
    with pytest.raises(ConfigError, match="HOPINDEX_SENTENCES_MAX_GROUP_SIZE"):
        registry.load_settings({"HOPINDEX_SENTENCES_MAX_GROUP_SIZE": "0"})


@pytest.mark.integration
@with_plugin
def test_an_ingest_builds_exactly_the_units_the_method_defines(
        tmp_path: Path, server: LlmTestServer) -> None:
    """One passage per sentence, one unit per capitalised first word joining every
    document's sentences that start with it, a node per pair of documents and a root:
    no more, no fewer. The job records each phase by kind and counts its items."""
    with _client(tmp_path, server) as client:
        job = _ingest(client, CORPUS)
        info = client.service.backends.state.get_index(INDEX)
        assert info is not None and info.method == "sentences"
        assert _kinds_and_texts(client) == Counter(PASSAGES | WORDS | TREE)
        units = _units(client)
    assert {k: v for k, v in job.phases.items() if k.startswith("sentences.")} == PHASES
    expected_counts = {"sentences.sentences": 3, "sentences.words": 2, "sentences.tree": 3}
    for phase, done in expected_counts.items():
        counts = job.counts[phase]
        assert (counts.done, counts.failed, counts.skipped, counts.total) == (done, 0, 0, done)
    assert job.units_embedded == len(units) == 12
    paris = next(u for u in units if u.entities == ("Paris",))
    assert paris.source_doc_ids == ("a", "b")  # members: the documents cited


@pytest.mark.integration
@with_plugin
def test_a_second_identical_ingest_embeds_nothing(
        tmp_path: Path, server: LlmTestServer) -> None:
    """Unchanged documents are skipped by the method's documents phase, no group or
    level is rebuilt and nothing is embedded; the units are the same ids and texts."""
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        before = {u.unit_id: u.text for u in _units(client)}
        again = _ingest(client, CORPUS)
        after = {u.unit_id: u.text for u in _units(client)}
    assert after == before
    assert again.units_embedded == 0
    first = again.counts["sentences.sentences"]
    assert (first.done, first.skipped, first.total) == (0, 3, 3)
    assert again.groups_rebuilt == again.groups_removed == 0


@pytest.mark.integration
@with_plugin
def test_changing_one_document_changes_only_the_units_citing_it(
        tmp_path: Path, server: LlmTestServer) -> None:
    """Editing document b rewrites its passages, the word groups and tree nodes that
    cite it, and nothing else; only the new units are embedded, the replaced ones are
    gone from the index."""
    changed = [*CORPUS[:1], raw("Beta", "The river is the Marne. Paris lies on its banks.",
                                doc_id="b"), *CORPUS[2:]]
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        before = {u.unit_id: u for u in _units(client)}
        job = _ingest(client, changed)
        after = {u.unit_id: u for u in _units(client)}
        stored = sum(client.service.backends.state.count_units(INDEX).values())
    removed = before.keys() - after.keys()
    added = after.keys() - before.keys()
    assert all("b" in before[u].source_doc_ids for u in removed)
    assert all("b" in after[u].source_doc_ids for u in added)
    # b's two passages, the Paris and The words, the (a, b) node and the root.
    assert len(removed) == len(added) == 6
    assert job.units_embedded == len(added)
    assert stored == len(after) == len(before)
    assert ("passage", "The river is the Marne.") in {(u.kind.value, u.text)
                                                      for u in after.values()}


@pytest.mark.integration
@with_plugin
def test_a_word_a_document_no_longer_starts_a_sentence_with_drops_its_sentence(
        tmp_path: Path, server: LlmTestServer) -> None:
    """Document b loses its sentence starting with "Paris": the documents phase touches
    the groups that cited b, so the Paris unit is rebuilt from document a alone."""
    changed = [*CORPUS[:1], raw("Beta", "The river is the Seine. It is long.", doc_id="b"),
               *CORPUS[2:]]
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        _ingest(client, changed)
        words = {u.entities[0]: (u.text, u.source_doc_ids) for u in _units(client)
                 if u.kind.value == "proposition_aggregate"}
    assert words["Paris"] == ("Paris is in France. Paris has a river.", ("a",))
    assert words["It"] == ("It is long.", ("b",))


@pytest.mark.integration
@with_plugin
def test_a_delete_rebuilds_the_groups_and_levels_its_document_fed(
        tmp_path: Path, server: LlmTestServer) -> None:
    """Deleting c drops its passages, rebuilds the word group that quoted it (named by
    the method's forget_documents), removes the tree node of its pair and rebuilds the
    root over the one node left."""
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        job = client.delete_documents(INDEX, ["c"])
        assert job.state is JobState.SUCCEEDED, job.reason
        got = _kinds_and_texts(client)
        stored = sum(client.service.backends.state.count_units(INDEX).values())
    assert got == Counter([
        *(p for p in PASSAGES if p[1] not in ("rivers flow.", "The sea is far.")),
        ("proposition_aggregate", "Paris is in France. Paris has a river. Paris lies on it."),
        ("proposition_aggregate", "The city is old. The river is the Seine."),
        ("summary", "Paris is in France. The river is the Seine."),
        ("summary", "Paris is in France. The river is the Seine.")])
    assert stored == sum(got.values())
    assert job.groups_removed == 1  # the node of the pair (c)


@pytest.mark.integration
@with_plugin
def test_the_group_size_setting_reaches_the_phase(
        tmp_path: Path, server: LlmTestServer) -> None:
    """With HOPINDEX_SENTENCES_MAX_GROUP_SIZE=2 a word unit joins two sentences, the
    first in document order, and cites only their documents."""
    with _client(tmp_path, server,
                 method_env={"HOPINDEX_SENTENCES_MAX_GROUP_SIZE": "2"}) as client:
        _ingest(client, CORPUS)
        words = {u.text: u.source_doc_ids for u in _units(client)
                 if u.kind.value == "proposition_aggregate"}
    assert words == {"Paris is in France. Paris has a river.": ("a",),
                     "The city is old. The river is the Seine.": ("a", "b")}


@pytest.mark.integration
@with_plugin
def test_the_index_answers_its_default_query_and_refuses_one_that_cannot_read_it(
        tmp_path: Path, server: LlmTestServer) -> None:
    """A query naming no method runs the plugin's default (the naive query over its
    passages); a query method reading kinds the index lacks is refused, naming those
    that fit."""
    with _client(tmp_path, server) as client:
        _ingest(client, CORPUS)
        result = client.query(INDEX, "Which river is in Paris?", k=5)
        with pytest.raises(InvalidInputError, match="sentences_naive"):
            client.query(INDEX, "Which river is in Paris?", method="indexrag", k=5)
    assert result.passages
    assert {p.doc_id for p in result.passages} <= {"a", "b", "c"}
    assert all(p.via_kind == "passage" for p in result.passages)
