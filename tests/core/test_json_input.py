"""The bounded JSON parser: hostile nesting, numbers, strings and surrogates become one
InvalidInputError naming the field as a path, never a RecursionError or ValueError,
and ordinary JSON parses as ``json.loads`` does."""

from __future__ import annotations

import json
import threading

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.core.json_input import (
    MAX_JSON_DEPTH,
    MAX_JSON_NUMBER_CHARS,
    JsonInputError,
    JsonLimits,
    JsonSyntaxError,
    decode_json,
    decode_json_bytes,
    find_violation,
    parse_json,
)

DEEP = "[" * 10_000 + "]" * 10_000


def refused(text: str, limits: JsonLimits | None = None) -> JsonInputError:
    with pytest.raises(JsonInputError) as caught:
        parse_json(text, limits or JsonLimits())
    assert isinstance(caught.value, InvalidInputError)
    return caught.value


@pytest.mark.parametrize("text", [
    '{"id": "a", "title": "T", "text": "x", "metadata": {"tags": ["a", "b"], "n": -1.5e3}}',
    '[1, 2.5, true, false, null, "\\u00e9\\ud83d\\ude00", {"": []}]',
    '"caf\u00e9 \U0001f600"', "12345678901234567890123", " {} ",
])
def test_ordinary_json_parses_as_json_loads_does(text: str) -> None:
    """Escaped pairs (an emoji), raw non-ASCII, big-but-bounded integers, any shape."""
    assert parse_json(text) == json.loads(text)


@pytest.mark.parametrize(("text", "path"), [
    (DEEP, "[0][0][0][0][0][0][0][0][0][0][0][0]"),
    ('{"metadata": {"tags": [1, ' + DEEP + "]}}", "metadata.tags[1][0][0][0][0][0][0][0][0][0]"),
    ('{"a b": ' + "{\"k\": " * 200 + "1" + "}" * 200 + "}", '["a b"].k.k.k.k.k.k.k.k.k.k.k'),
])
def test_nesting_past_the_limit_names_the_field_without_recursing(text: str, path: str) -> None:
    """10,000 levels (a RecursionError for json.loads) is refused before parsing,
    naming the path down to where it goes too deep (cut after a dozen parts)."""
    error = refused(text)
    assert error.path == path and error.where == path
    assert f"deeper than {MAX_JSON_DEPTH} levels" in str(error)
    assert error.line == 1 and error.column is not None


def test_nesting_at_the_limit_is_accepted_and_one_more_is_not() -> None:
    """Exactly max_depth containers parse; max_depth + 1 do not, in any mix of kinds."""
    limits = JsonLimits(max_depth=6)
    assert parse_json('[{"k": ' * 3 + "1" + "}]" * 3, limits)
    error = refused('{"a": [{"b": [{"c": [[1]]}]}]}', limits)
    assert error.path == "a[0].b[0].c[0]"


def test_the_line_of_a_deep_value_is_named() -> None:
    """In a multi-line body the error gives the line and column where nesting goes past."""
    error = refused('{\n  "ok": 1,\n  "deep": ' + DEEP + "\n}")
    assert (error.line, error.path) == (3, "deep" + "[0]" * 11)


@pytest.mark.parametrize(("literal", "reason"), [
    ("9" * 5_000, "number of 5,000 characters"),
    ("-" + "1" * MAX_JSON_NUMBER_CHARS, f"number of {MAX_JSON_NUMBER_CHARS + 1} characters"),
    ("0." + "5" * 200, "number of 202 characters"),
    ("1e400", "out of the range of a 64-bit float"),
    ("NaN", "NaN, which is not a JSON number"),
    ("-Infinity", "-Infinity, which is not a JSON number"),
])
def test_numbers_past_the_limit_name_their_field(literal: str, reason: str) -> None:
    """A 5,000-digit integer (a ValueError for json.loads), a long fraction, a float
    out of range and the non-JSON constants are each refused by path."""
    error = refused('{"metadata": {"counts": [0, ' + literal + "]}}")
    assert error.path == "metadata.counts[1]"
    assert reason in str(error)


def test_a_number_at_the_limit_is_a_number() -> None:
    """A literal of exactly max_number_chars converts."""
    assert parse_json("9" * MAX_JSON_NUMBER_CHARS) == int("9" * MAX_JSON_NUMBER_CHARS)


@pytest.mark.parametrize(("text", "path", "reason"), [
    ('{"question": "\\ud800"}', "question", "unpaired surrogate (U+D800) at character 0"),
    ('{"question": "ok \\udfff"}', "question", "unpaired surrogate (U+DFFF) at character 3"),
    ('{"question": "\ud800"}', "question", "unpaired surrogate (U+D800)"),  # raw
    ('{"tags": ["a", "b\\udc00"]}', "tags[1]", "unpaired surrogate (U+DC00)"),
    ('{"m": {"\\ud800": 1}}', 'm["\\ud800"]', "key holding an unpaired surrogate"),
    ('{"a": "\\ud83d"}', "a", "U+D83D"),  # the first half of a pair, alone
])
def test_unpaired_surrogates_escaped_or_raw_name_their_field(text: str, path: str,
                                                             reason: str) -> None:
    """UTF-8 cannot hold a lone surrogate: refused as an escape, as a raw character,
    in a key; the path of a bad key is written with ASCII escapes."""
    error = refused(text)
    assert error.path == path
    assert reason in str(error)
    str(error).encode("utf-8")


def test_surrogates_encoded_in_utf8_bytes_reach_the_field_check() -> None:
    """Bytes ED A0 80 (a surrogate encoded as if UTF-8) decode, so the check names the
    field; any other bad byte is refused at its offset."""
    error = refused(decode_json_bytes(b'{"question": "why \xed\xa0\x80"}'))
    assert error.path == "question" and "surrogate" in str(error)
    with pytest.raises(JsonInputError, match="offset 14"):
        decode_json_bytes(b'{"question": "\xff"}')


def test_strings_and_keys_past_the_limit_name_their_field() -> None:
    """A string or a key longer than max_string_chars, named with the limit's setting."""
    limits = JsonLimits(max_string_chars=10, string_limit_name="max_document_bytes")
    error = refused('{"ok": "0123456789", "meta": {"x": "01234567890"}}', limits)
    assert error.path == "meta.x"
    assert "string of 11 characters, over max_document_bytes=10" in str(error)
    key = refused('{"meta": {"01234567890": 1}}', limits)
    assert key.path == "meta" and "key of 11 characters" in str(key)


def test_syntax_errors_say_line_and_column() -> None:
    """Malformed JSON is a JsonSyntaxError with the parser's message and position."""
    with pytest.raises(JsonSyntaxError) as caught:
        parse_json('{\n  "a": 1,\n  nope}')
    assert (caught.value.line, caught.value.column) == (3, 3)
    assert "Expecting property name" in caught.value.message


def test_decode_keeps_refused_values_for_a_check_per_record() -> None:
    """decode_json parses a list whose second record holds a runaway number: the first
    record checks clean, the second is refused by its own path."""
    records, suspect = decode_json('[{"text": "good"}, {"text": "bad", "n": ' + "1" * 500 + "}]")
    assert suspect
    assert find_violation(records[0]) is None
    found = find_violation(records[1], path="[1]")
    assert found is not None and found.path == "[1].n"


def test_clean_text_is_not_suspect() -> None:
    """Text with nothing a limit could refuse skips the walk entirely."""
    assert decode_json('{"text": "caf\u00e9", "n": 12, "f": 1.5}') == (
        {"text": "caf\u00e9", "n": 12, "f": 1.5}, False)


def test_threads_parsing_at_once_keep_their_own_findings() -> None:
    """Ingest reads files on several threads: a refused number on one thread never
    marks another thread's clean text, nor the other way round."""
    results: dict[str, list[bool]] = {"clean": [], "bad": []}

    def parse(kind: str, text: str) -> None:
        for _ in range(300):
            results[kind].append(decode_json(text)[1])

    threads = [threading.Thread(target=parse, args=("clean", '{"n": 1}')),
               threading.Thread(target=parse, args=("bad", '{"n": ' + "1" * 200 + "}"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not any(results["clean"]) and all(results["bad"])
