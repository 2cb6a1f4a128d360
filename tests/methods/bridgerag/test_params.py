"""Query parameters: defaults from the paper, conversions, errors naming the parameter."""

from __future__ import annotations

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.methods.base import QueryOptions
from hopindex.methods.bridgerag.params import (
    EVAL_VARIANTS,
    BridgePosition,
    BridgeRagParams,
    Condition,
    DecisionRecords,
    Extraction,
)


def test_defaults_are_the_papers_numbers() -> None:
    """Condition C, separate calls, one bridge, alpha 0.1, 700 characters, 5/10/15/5/20."""
    p = BridgeRagParams.from_params({})
    assert (p.condition, p.extraction, p.bridges, p.alpha, p.passage_chars) == (
        Condition.C, Extraction.SEPARATE, 1, 0.1, 700)
    assert (p.hop1_k, p.svo_k, p.svo_keep, p.entity_k, p.pool_size) == (5, 10, 15, 5, 20)
    assert p.bridge_position is BridgePosition.POOL and p.record is None


def test_strings_from_a_command_line_and_json_values_convert() -> None:
    """'0.15', 0.15 and 1 all read; enum values are case-blind."""
    p = BridgeRagParams.from_params({"alpha": "0.15", "bridges": "2", "condition": "b",
                                     "extraction": "MERGED", "passage_chars": 500.0,
                                     "record": "jsonl", "pool_size": 10})
    assert (p.alpha, p.bridges, p.condition, p.extraction) == (0.15, 2, Condition.B,
                                                               Extraction.MERGED)
    assert p.passage_chars == 500 and p.record is DecisionRecords.JSONL and p.pool_size == 10
    assert BridgeRagParams.from_params({"alpha": 1}).alpha == 1.0


@pytest.mark.parametrize(("params", "where"), [
    ({"alpha": "-0.1"}, "params.alpha"),
    ({"alpha": "high"}, "params.alpha"),
    ({"alpha": True}, "params.alpha"),
    ({"bridges": "3"}, "params.bridges"),
    ({"bridges": "1.5"}, "params.bridges"),
    ({"bridges": 1.5}, "params.bridges"),
    ({"condition": "D"}, "params.condition"),
    ({"passage_chars": "10"}, "params.passage_chars"),
    ({"pool_size": "0"}, "params.pool_size"),
    ({"record": "yes"}, "params.record"),
    ({"hop1_k": "1", "bridges": "2"}, "params.bridges"),
    ({"judge": "on"}, "params.judge"),
])
def test_bad_values_name_the_parameter(params: dict[str, object], where: str) -> None:
    """Every bad value is an InvalidInputError whose ``where`` is params.<name>."""
    with pytest.raises(InvalidInputError) as raised:
        BridgeRagParams.from_params(params)  # type: ignore[arg-type]  # bad on purpose
    assert raised.value.where == where


def test_as_dict_is_plain_json() -> None:
    """The record keeps the parameters as plain values (enum members as strings)."""
    values = BridgeRagParams(condition=Condition.A).as_dict()
    assert values["condition"] == "A" and values["record"] is None


def test_eval_variants_are_valid_parameter_sets() -> None:
    """Every variant hopindex eval compares parses, and they differ as named."""
    parsed = {name: BridgeRagParams.from_params(v) for name, v in EVAL_VARIANTS.items()}
    assert [parsed[n].condition for n in ("A", "B", "C")] == [Condition.A, Condition.B,
                                                             Condition.C]
    assert parsed["merged"].extraction is Extraction.MERGED and parsed["bridges2"].bridges == 2


def test_query_options_check_param_types() -> None:
    """QueryOptions accepts strings, numbers and booleans as parameter values, names a bad
    one, and stays hashable."""
    options = QueryOptions(params={"alpha": 0.2, "condition": "A", "flag": True})
    assert hash(options) == hash(QueryOptions())
    with pytest.raises(InvalidInputError) as raised:
        QueryOptions(params={"alpha": [0.1]})  # type: ignore[dict-item]  # bad on purpose
    assert raised.value.where == "params.alpha"
    with pytest.raises(InvalidInputError):
        QueryOptions(params={"": "x"})
