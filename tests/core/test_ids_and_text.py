"""Ids are deterministic and names are safe; entity keys follow IndexRAG's filter."""

import pytest

from hopindex.core.errors import InvalidIndexNameError
from hopindex.core.ids import content_hash, doc_id_from_title, unit_id, validate_index_name
from hopindex.core.text import keep_entity, normalize_entity, title_entity


def test_unit_id_is_deterministic_and_depends_on_every_part() -> None:
    """The same (index, kind, key, text) gives the same id; changing any part changes it."""
    base = unit_id("a", "passage", "d1#0", "text")
    assert base == unit_id("a", "passage", "d1#0", "text")
    assert len({base, unit_id("b", "passage", "d1#0", "text"),
                unit_id("a", "bridge", "d1#0", "text"), unit_id("a", "passage", "d2#0", "text"),
                unit_id("a", "passage", "d1#0", "text2")}) == 5


def test_content_hash_ignores_whitespace_layout_only() -> None:
    """Re-flowed whitespace is not a change; a changed word is."""
    assert content_hash("T", "a  b\nc") == content_hash("T", "a b c")
    assert content_hash("T", "a b c") != content_hash("T", "a b d")


def test_doc_id_from_title_is_stable() -> None:
    """A record without an id is identified by its title, stably."""
    assert doc_id_from_title("Lilu  (mythology)") == doc_id_from_title("Lilu (mythology)")


@pytest.mark.parametrize("name", ["../etc", "a/b", "A", "", "x" * 64, "-lead", "a b", "a.b"])
def test_unsafe_index_names_are_rejected(name: str) -> None:
    """Names that could escape a folder or break a collection name are refused."""
    with pytest.raises(InvalidIndexNameError, match="index"):
        validate_index_name(name)


def test_safe_index_name_is_accepted() -> None:
    """Lower-case letters, digits, '_' and '-' pass."""
    assert validate_index_name("hotpot_100-v2") == "hotpot_100-v2"


def test_entity_normalisation_and_filter() -> None:
    """Keys are lower-cased and stripped; short keys, numbers and amounts are dropped."""
    assert normalize_entity("  The Beatles' ") == "beatles"
    assert normalize_entity("Obama's") == "obama"
    assert not keep_entity("usa")
    assert not keep_entity("1,234")
    assert not keep_entity("$5 million")
    assert keep_entity("lilu")
    assert title_entity("Lilu (mythology)") == "lilu"
