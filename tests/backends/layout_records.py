"""Records as the built-in state stores kept them before their layout upgrades."""

from __future__ import annotations

from hopindex.backends.state.connection import dumps
from hopindex.core.models import TextAnalysis


def encoded_analysis(analysis: TextAnalysis) -> str:
    """An analysis as the stores' layout before records kept it (the SQLite ``analyses``
    table, the Redis ``analysis`` hash): what their layout upgrades copy into records."""
    return dumps({"s": [[s.start, s.end] for s in analysis.sentences],
                  "e": [[e.text, e.label, e.start, e.end] for e in analysis.entities]})
