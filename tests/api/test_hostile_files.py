"""The other JSON files the CLI reads, an export to import and a question set to
evaluate on, are read by the same bounded parser: hostile content is an input error
naming the file and line, never a RecursionError or ValueError."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hopindex.api.transfer_format import read_records
from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.datasets import load_questions

HOSTILE = {
    "deep": ("[" * 10_000 + "]" * 10_000, "deeper than"),
    "huge integer": ('{"type": "document", "n": ' + "9" * 5_000 + "}", "number of 5,000"),
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_an_export_line_that_is_hostile_is_an_input_error(kind: str) -> None:
    """hopindex import: the bad line is named, as a malformed one is."""
    line, reason = HOSTILE[kind]
    with pytest.raises(InvalidInputError, match=reason) as caught:
        list(read_records(io.StringIO('{"type": "header"}\n' + line + "\n"), Path("x.jsonl")))
    assert caught.value.where == "x.jsonl:2"


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_question_file_is_an_input_error(tmp_path: Path, kind: str,
                                                   suffix: str) -> None:
    """hopindex eval: a question file too deep or with a runaway number names the file
    (and line, for JSON Lines)."""
    text, reason = HOSTILE[kind]
    path = tmp_path / f"questions{suffix}"
    path.write_text(text if suffix == ".json" else f"{text}\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=reason) as caught:
        load_questions(path)
    assert caught.value.where == (str(path) if suffix == ".json" else f"{path}:1")
