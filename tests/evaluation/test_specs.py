"""Method specs of ``hopindex eval``: parameters, variant shorthands, the bridgerag expansion."""

from __future__ import annotations

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.specs import (
    MethodSpec,
    expand_method_specs,
    parse_method_spec,
    parse_param_pairs,
)


def test_plain_names_stay_as_they_were() -> None:
    """A method without parameters is its own label, with no parameters."""
    assert parse_method_spec("naive") == MethodSpec(label="naive", method="naive")
    assert expand_method_specs(["naive", "extractive"]) == [
        MethodSpec("naive", "naive"), MethodSpec("extractive", "extractive")]


def test_parameters_and_variant_names_combine() -> None:
    """KEY=VALUE tokens and the method's variant names mix, later ones winning."""
    spec = parse_method_spec("bridgerag:A,alpha=0.15")
    assert spec == MethodSpec(label="bridgerag:A,alpha=0.15", method="bridgerag",
                              params={"condition": "A", "alpha": "0.15"})
    assert parse_method_spec("bridgerag:merged").params == {"extraction": "merged"}
    assert parse_method_spec("naive:k2=v").params == {"k2": "v"}


def test_bare_bridgerag_expands_to_its_comparison() -> None:
    """--method bridgerag compares A, B, C, the merged call and two bridges, in that order."""
    specs = expand_method_specs(["bridgerag", "naive"])
    assert [s.label for s in specs] == ["bridgerag:A", "bridgerag:B", "bridgerag:C",
                                        "bridgerag:merged", "bridgerag:bridges2", "naive"]
    assert specs[0].params == {"condition": "A"} and specs[2].params == {}


def test_bad_specs_name_the_option() -> None:
    """An unknown variant or a token without '=' is an error naming the spec."""
    with pytest.raises(InvalidInputError, match="variants: A, B, C") as raised:
        parse_method_spec("bridgerag:D")
    assert raised.value.where == "--method bridgerag:D"
    with pytest.raises(InvalidInputError):
        parse_method_spec(":x=1")
    with pytest.raises(InvalidInputError) as raised:
        parse_param_pairs(["alpha"])
    assert raised.value.where == "--param"
    assert parse_param_pairs(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}


def test_a_pool_parameter_is_a_key_value_token() -> None:
    """`--method poolrag --method poolrag:pool=similarity` (as SiReRAG's comparison of its
    pools) gives two rows of one method, the second with the pool parameter; a method
    without comparison variants is not expanded."""
    specs = expand_method_specs(["poolrag", "poolrag:pool=similarity"])
    assert specs == [MethodSpec(label="poolrag", method="poolrag"),
                     MethodSpec(label="poolrag:pool=similarity", method="poolrag",
                                params={"pool": "similarity"})]
    assert parse_method_spec("poolrag:pool=both,k=5").params == {"pool": "both", "k": "5"}
