"""The engines of a process that does not own them: every call goes as JSON to the
owner's engines and back. They pass the engines' own contracts, their errors keep
their types, and vectors come back bit for bit."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hopindex.backends.engine_calls import Answer, Engine, Request, answer_request, request
from hopindex.backends.engine_remote import RemoteKeywordIndex, RemoteVectorStore
from hopindex.backends.keyword.tantivy_index import TantivyKeywordIndex
from hopindex.backends.protocols import UnitFilter
from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore
from hopindex.core.errors import (
    BackendError,
    InvalidIndexNameError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.models import UnitKind
from hopindex.testing.contracts.keyword_index import KeywordIndexContract
from hopindex.testing.contracts.keyword_index import record as keyword_record
from hopindex.testing.contracts.vector_store import DIM, VectorStoreContract, axis, record


class OwnerOverJson:
    """The owner's side, in this process: requests and answers pass through JSON as
    they do on the engine queue; the engines are real and owned here."""

    def __init__(self, root: Path) -> None:
        self.vectors = QdrantEdgeVectorStore(root / "vectors")
        self.keywords = TantivyKeywordIndex(root / "keyword")
        self.sent: list[Request] = []

    def send_request(self, sent: Request) -> Answer:
        wire = json.loads(json.dumps(sent))
        self.sent.append(wire)
        answer = answer_request(lambda: self.vectors, lambda: self.keywords,
                                lambda: {"owner": "here"}, wire)
        decoded: dict[str, Any] = json.loads(json.dumps(answer))
        return decoded

    def close(self) -> None:
        self.vectors.close()
        self.keywords.close()


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[OwnerOverJson]:
    found = OwnerOverJson(tmp_path)
    yield found
    found.close()


class TestRemoteVectorStore(VectorStoreContract):
    persistent = True

    @pytest.fixture
    def store(self, owner: OwnerOverJson) -> RemoteVectorStore:
        return RemoteVectorStore(owner)

    @pytest.fixture
    def reopen_store(self, owner: OwnerOverJson) -> Callable[[], RemoteVectorStore]:
        return lambda: RemoteVectorStore(owner)


class TestRemoteKeywordIndex(KeywordIndexContract):
    persistent = True

    @pytest.fixture
    def store(self, owner: OwnerOverJson) -> RemoteKeywordIndex:
        return RemoteKeywordIndex(owner)

    @pytest.fixture
    def reopen_store(self, owner: OwnerOverJson) -> Callable[[], RemoteKeywordIndex]:
        return lambda: RemoteKeywordIndex(owner)


def test_vectors_and_hits_come_back_exactly(owner: OwnerOverJson) -> None:
    """A float32 vector read through the owner equals the stored one bit for bit (an
    export through it moves the very vectors), and scores equal the engine's own."""
    remote = RemoteVectorStore(owner)
    remote.ensure_index("idx", DIM)
    noisy = [record(n) for n in range(4)]
    remote.upsert_vectors("idx", noisy)
    back = remote.get_vectors("idx", [r.unit_id for r in noisy])
    assert [r.unit_id for r in back] == [r.unit_id for r in noisy]
    for got, sent in zip(back, noisy, strict=True):
        assert got.vector.dtype == np.float32 and np.array_equal(got.vector, sent.vector)
        assert got.payload == sent.payload
    only = UnitFilter(kinds=(UnitKind.PASSAGE,), entities=())
    assert (remote.search_vectors("idx", axis(2), 3, only)
            == owner.vectors.search_vectors("idx", axis(2), 3, only))


def test_errors_come_back_as_their_own_types(owner: OwnerOverJson) -> None:
    """What the owner's engine raises is raised here as the same type with the same
    message (a bad index name keeps its field), so the API answers as it would locally."""
    vectors = RemoteVectorStore(owner)
    keywords = RemoteKeywordIndex(owner)
    with pytest.raises(InvalidIndexNameError) as bad_name:
        vectors.ensure_index("Bad Name!", DIM)
    with pytest.raises(InvalidIndexNameError) as local_bad_name:
        owner.vectors.ensure_index("Bad Name!", DIM)
    assert str(bad_name.value) == str(local_bad_name.value)
    assert bad_name.value.where == local_bad_name.value.where
    with pytest.raises(NotFoundError, match="ensure_index first"):
        keywords.index_units("missing", [keyword_record("paris")])
    vectors.ensure_index("idx", DIM)
    with pytest.raises(BackendError, match="dimension mismatch"):
        vectors.search_vectors("idx", axis(0, dim=DIM + 1), 3)
    unknown = owner.send_request(request(Engine.VECTORS, "format_disk", index="idx"))
    with pytest.raises(InvalidInputError, match="op: no vectors operation 'format_disk'"):
        RemoteVectorStore(owner)._call("format_disk", index="idx")
    assert unknown["error"]["types"][0] == "InvalidInputError"


def test_empty_writes_send_nothing_and_close_leaves_the_owner_open(
        owner: OwnerOverJson) -> None:
    """Empty batches cost no round trip; closing a remote engine closes nothing of the
    owner's."""
    remote = RemoteKeywordIndex(owner)
    remote.ensure_index("idx")
    remote.index_units("idx", [])
    remote.delete_units("idx", [])
    assert [r["op"] for r in owner.sent] == ["ensure_index"]
    remote.close()
    remote.index_units("idx", [keyword_record("fox")])
    assert owner.keywords.count_units("idx") == 1
