"""Which query methods a comparison runs on each index: defaults from the registry, named
ones that can read the index, and a note for each that cannot."""

from __future__ import annotations

import pytest

from hopindex.core.errors import InvalidIndexNameError, InvalidInputError
from hopindex.evaluation.compare import index_name, query_specs
from hopindex.evaluation.report import SkippedMethod
from hopindex.methods.registry import get_index_method


@pytest.mark.parametrize("index_method", ["extractive", "indexrag"])
def test_no_method_named_runs_the_index_methods_defaults(index_method: str) -> None:
    """With no --method, an index runs its method's default query methods, in order."""
    specs, skipped = query_specs(index_method, [])
    assert [s.method for s in specs] == list(get_index_method(index_method).default_queries)
    assert skipped == []


def test_a_method_that_cannot_read_the_index_is_skipped_with_its_reason() -> None:
    """naive ranks passages, which an indexrag index does not hold: it is skipped there,
    with a note saying what it reads and what the index holds; ircot reads either."""
    specs, skipped = query_specs("indexrag", ["naive", "ircot"])
    assert [s.label for s in specs] == ["ircot"]
    assert skipped == [SkippedMethod(method="naive", index_method="indexrag",
                                     reason="it reads passage units, the index holds "
                                            "aku, bridge")]
    specs, skipped = query_specs("extractive", ["naive", "ircot"])
    assert [s.label for s in specs] == ["naive", "ircot"] and skipped == []


def test_variants_are_kept_or_skipped_one_by_one() -> None:
    """A method with variants expands first; each variant row is checked like any other."""
    specs, skipped = query_specs("extractive", ["bridgerag", "indexrag:k=3"])
    assert [s.label for s in specs][:2] == ["bridgerag:A", "bridgerag:B"]
    assert [s.method for s in specs] == ["bridgerag"] * len(specs)
    assert [s.method for s in skipped] == ["indexrag:k=3"]


def test_an_unknown_method_is_refused_naming_the_known_ones() -> None:
    """A misspelt --method stops the run instead of being skipped as unreadable."""
    with pytest.raises(InvalidInputError, match=r"unknown method 'naiv'; known: .*naive"):
        query_specs("extractive", ["naiv"])


def test_index_names_append_the_method_and_stay_valid() -> None:
    """Each compared index is <base>-<method>; a base too long for that is refused."""
    assert index_name("hq", "indexrag") == "hq-indexrag"
    with pytest.raises(InvalidIndexNameError):
        index_name("h" * 60, "indexrag")
