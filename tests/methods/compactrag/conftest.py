"""CompactRAG tests share tiny local models, built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.methods.compactrag.tiny_models import save_tiny_extractor, save_tiny_rewriter


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compactrag_models")
    save_tiny_extractor(root / "extractor")
    save_tiny_rewriter(root / "rewriter")
    return root / "extractor", root / "rewriter"
