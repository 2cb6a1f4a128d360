"""The one check of what a store can keep names the field at any depth, and never
recurses on hostile nesting."""

from __future__ import annotations

import datetime
import json

import pytest

from hopindex.core.text import MAX_METADATA_DEPTH, printable, unstorable_field


@pytest.mark.parametrize(("fields", "path"), [
    ([("title", "a\ud800b")], "title"),
    ([("id", "ok"), ("text", "fine"), ("metadata", {"author": "x\udfff"})], "metadata.author"),
    ([("metadata", {"tags": ["ok", "\ud800"]})], "metadata.tags[1]"),
    ([("metadata", {"a": {"b": [{"c": "\ud800"}]}})], "metadata.a.b[0].c"),
    ([("metadata", {"first name": "\ud800"})], 'metadata["first name"]'),
    ([("metadata", {"k\ud800": 1})], 'metadata["k\\ud800"]'),
    ([("", {"text": "ok", "author": "\ud800"})], "author"),
])
def test_an_unpaired_surrogate_is_found_and_its_field_named(
        fields: list[tuple[str, object]], path: str) -> None:
    """Strings and keys at any depth: the path says where, and is itself storable."""
    found = unstorable_field(fields)
    assert found is not None
    assert found.field == path
    assert "surrogate" in found.reason
    path.encode("utf-8")


def test_storable_records_pass() -> None:
    """Every JSON value a reader can produce, valid Unicode included, passes."""
    record = {"id": 7, "title": "Zoë 🙂", "text": "naïve", "metadata": {
        "n": 1.5, "flag": True, "none": None, "list": [1, "two", {"three": [3]}],
        "名前": "non-ASCII keys are valid", "emoji": "\U0001f642"}}
    assert unstorable_field([("", record)]) is None


def test_values_json_cannot_hold_are_named() -> None:
    """A program's metadata may hold objects no JSON store can write."""
    found = unstorable_field([("metadata", {"when": datetime.date(2024, 1, 1)})])
    assert found is not None and found.field == "metadata.when"
    assert "date" in found.reason


def test_deep_nesting_is_refused_without_recursion() -> None:
    """Nesting far past the interpreter's recursion limit is one error, not a crash."""
    deep: object = "leaf"
    for _ in range(50_000):
        deep = [deep]
    found = unstorable_field([("metadata", deep)])
    assert found is not None
    assert f"deeper than {MAX_METADATA_DEPTH}" in found.reason
    shallow: object = "leaf"
    for _ in range(MAX_METADATA_DEPTH - 1):
        shallow = {"k": shallow}
    assert unstorable_field([("metadata", shallow)]) is None
    json.dumps(shallow)


def test_printable_escapes_only_surrogates() -> None:
    """Bad names become escapes a record can store; good text is untouched."""
    assert printable("a\udcffb") == "a\\udcffb"
    assert printable("Zoë 🙂") == "Zoë 🙂"
    printable("\ud800").encode("utf-8")
