"""Shared fixtures: clients of services over embedded backends in a temporary data dir,
and clients in LLM mode against LLM test servers on loopback."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from importlib.resources import files
from pathlib import Path

import pytest

from hopindex import Client
from hopindex.api.client.local import LocalClient
from hopindex.api.client.models import IngestPlanView
from hopindex.core.budget import BudgetLimits
from hopindex.core.models import Job, JobState
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

ClientFactory = Callable[..., LocalClient]
LlmClientFactory = Callable[..., LocalClient]


def local_client(settings: Settings) -> LocalClient:
    """``Client.local`` over ``settings``: the service in this process (no server owns
    a test's data dir, and one that did would be a fault to report, not to go through),
    its internals at ``client.service`` for the tests that inspect them."""
    client = Client.local(settings=settings, through_server=False)
    assert isinstance(client, LocalClient)
    return client


def ingest_documents(client: LocalClient, index: str, documents: Sequence[RawDocument], *,
                     method: str | None = None, wait: bool = True,
                     limits: BudgetLimits | None = None) -> Job:
    """``client.ingest`` of documents already read: the corpora here are RawDocuments,
    and as records they would be read again, named by line instead of by their own
    origins (what a job's errors and a plan's say where)."""
    return client.ingest_read(index, ReadResult(documents=list(documents)), method=method,
                              wait=wait, limits=limits)


def plan_documents(client: LocalClient, index: str, documents: Sequence[RawDocument], *,
                   method: str | None = None) -> IngestPlanView:
    """``client.plan_ingest`` of documents already read (see ``ingest_documents``)."""
    return client.plan_read(index, ReadResult(documents=list(documents)), method=method)


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[ClientFactory]:
    """Open clients over fresh embedded backends, each over data dir ``name`` with the
    settings given by keyword; models load once per process."""
    opened: list[LocalClient] = []

    def factory(name: str = "data", **overrides: object) -> LocalClient:
        settings = Settings(data_dir=tmp_path / name, **overrides).resolved()  # type: ignore[arg-type]
        client = local_client(settings)
        opened.append(client)
        return client

    yield factory
    for client in opened:
        client.close()


def llm_settings(data_dir: Path, server: LlmTestServer, **overrides: object) -> Settings:
    """Settings an operator would set for a provider, pointed at the test server; retries
    back off in milliseconds so fault tests stay fast."""
    values: dict[str, object] = {
        "llm_model": server.config.model, "llm_base_url": server.base_url,
        "llm_api_key": "test-key", "llm_backoff_base_s": 0.01, "llm_backoff_max_s": 0.05,
        "llm_timeout_s": 10.0}
    values.update(overrides)
    return Settings(data_dir=data_dir, **values).resolved()  # type: ignore[arg-type]


@pytest.fixture
def start_server() -> Iterator[Callable[..., LlmTestServer]]:
    """Start test servers with the given config; all are stopped at the end."""
    started: list[LlmTestServer] = []

    def start(**config: object) -> LlmTestServer:
        server = LlmTestServer(LlmServerConfig(**config))  # type: ignore[arg-type]
        server.start_in_thread()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def make_llm_client(tmp_path: Path) -> Iterator[LlmClientFactory]:
    """Clients of services in LLM mode against ``server``, each over data dir ``name``,
    settings overridden by keyword."""
    opened: list[LocalClient] = []

    def factory(server: LlmTestServer, name: str = "data", **overrides: object) -> LocalClient:
        client = local_client(llm_settings(tmp_path / name, server, **overrides))
        opened.append(client)
        return client

    yield factory
    for client in opened:
        client.close()


HOTPOT_SAMPLE = Path(str(files("hopindex") / "sample" / "hotpotqa-100"))
HOTPOT_INDEX = "hotpot"


@pytest.fixture(scope="session")
def hotpot_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data dir of the bundled HotpotQA-100 (994 paragraphs) ingested once into
    index ``hotpot`` with the default settings: ``extractive``, the CPU embedder.

    The ingest is a minute of CPU that several modules need; each opens its own copy
    (``hotpot_client``), so one that changes its index leaves the others' untouched.
    The service is closed before anything is copied (the embedded engines allow one
    process, and a copy of closed files is consistent)."""
    data_dir = tmp_path_factory.mktemp("hotpot-built")
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        job = client.ingest(HOTPOT_INDEX, [HOTPOT_SAMPLE / "corpus.json"])
    assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
    assert job.counts["extractive.stage1"].done == 994
    return data_dir


def hotpot_settings(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The settings of a private copy of the built HotpotQA-100 index."""
    data_dir = tmp_path_factory.mktemp("hotpot-copy") / "data"
    shutil.copytree(built, data_dir)
    return Settings(data_dir=data_dir).resolved()


def hotpot_client(built: Path, tmp_path_factory: pytest.TempPathFactory) -> LocalClient:
    """A client over a private copy of the built HotpotQA-100 index (close it)."""
    return local_client(hotpot_settings(built, tmp_path_factory))


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's worker processes start with COLUMNS=80 in their environment: the
    CLI's console, made at import, would keep that width for good instead of reading the
    COLUMNS each test's CliRunner sets, as it does in a real terminal's process. No
    test module is imported yet here."""
    if hasattr(config, "workerinput"):  # set in pytest-xdist's worker processes
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's ``--dist loadgroup`` (``make test`` runs two
    processes): a module's tests stay together, so its module fixtures are built once;
    the tests that start Celery worker processes run one after another in one group,
    as do the modules sharing the session's HotpotQA-100 build, which is then built
    once. Without xdist the marks do nothing.

    Under xdist the worker-process group, the longest by far, is collected first: the
    groups go to the processes in collection order, so it starts at once on one while
    the other takes the rest, instead of starting last and running alone.

    First among the hooks: xdist's worker turns the marks into the ``@group`` suffix of
    each test's id in its own hook, which runs before a conftest's and would see no
    marks (every test was then scheduled alone, module fixtures built on both
    processes and the worker-process tests run two at a time). That suffix is set on
    ``Item._nodeid``, which pytest 9.2 no longer reads: hence ``pytest<9.2``
    (pyproject.toml)."""
    root = Path(__file__).parent
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = Path(str(item.path)).relative_to(root)
        if module.parts[0] == "workers":
            group = "worker-processes"
        elif "hotpot_built" in getattr(item, "fixturenames", ()):
            group = "hotpot-built"
        else:
            group = module.as_posix()
        item.add_marker(pytest.mark.xdist_group(group))
    if hasattr(config, "workerinput"):  # set in pytest-xdist's worker processes
        items.sort(key=lambda item: Path(str(item.path)).relative_to(root).parts[0]
                   != "workers")  # stable: the order within each part is kept


def raw(title: str, text: str, doc_id: str | None = None) -> RawDocument:
    return RawDocument(doc_id=doc_id, title=title, text=text, metadata={}, origin=title)


CURIE_CORPUS = [
    raw("Marie Curie", "Marie Curie was a physicist and chemist born in Warsaw. She worked at "
        "the University of Paris and shared the Nobel Prize with Pierre Curie."),
    raw("Pierre Curie", "Pierre Curie was a French physicist. He married Marie Curie in 1895 "
        "and taught at the University of Paris."),
    raw("Warsaw", "Warsaw is the capital and largest city of Poland. Marie Curie was born "
        "in Warsaw in 1867."),
    raw("University of Paris", "The University of Paris was a university in Paris, France. "
        "Pierre Curie and Marie Curie both taught there."),
    raw("Poland", "Poland is a country in Central Europe. Its capital is Warsaw."),
    raw("Nobel Prize in Physics", "The Nobel Prize in Physics is awarded by the Royal Swedish "
        "Academy of Sciences. Pierre Curie received it in 1903."),
]

