"""Units of one embed batch that share a text (the task embeds each distinct text once
and maps the rows back) each get the vector of their own text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hopindex.core.models import UnitKind
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, ReadResult
from tests.methods.indexrag.conftest import local_client

pytestmark = pytest.mark.integration


def test_units_sharing_a_text_get_its_vector(tmp_path: Path) -> None:
    """Two documents naming the same people in one sentence each give those entities
    bridges of one text; each stored vector is the embedding of its unit's text."""
    documents = [
        RawDocument(doc_id=None, title=title, text=text, metadata={}, origin=title)
        for title, text in (
            ("Alpha", "Marie Curie and Pierre Curie met in Paris in 1894. It rained."),
            ("Beta", "Marie Curie and Pierre Curie married in Paris in 1895. It snowed."),
        )]
    with local_client(Settings(data_dir=tmp_path).resolved()) as client:
        job = client.ingest_read("shared", ReadResult(documents=documents), method="extractive")
        state, vectors = client.service.backends.state, client.service.backends.vectors
        units = state.units_of_documents("shared", sorted(state.document_hashes("shared")))
        bridges = [u for u in units if u.kind is UnitKind.BRIDGE]
        assert len(bridges) >= 2 and len({u.text for u in bridges}) < len(bridges)
        assert job.units_embedded == len(units)
        stored = {r.unit_id: r.vector for r in vectors.get_vectors(
            "shared", [u.unit_id for u in units])}
        assert stored.keys() == {u.unit_id for u in units}
        embedder = client.service.backends.embedder
        for unit in units:
            assert np.abs(stored[unit.unit_id] - embedder.embed_query(unit.text)).max() < 1e-4
