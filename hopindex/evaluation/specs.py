"""Method specs for ``hopindex eval``: a method with parameters, under a report label.

Grammar: ``METHOD`` or ``METHOD:TOKEN[,TOKEN…]`` where a token is ``KEY=VALUE`` (a
query parameter, validated by the method) or the name of one of the method's
comparison variants. A bare method that has variants expands to all of them:
``--method bridgerag`` compares conditions A, B and C, the merged SVO+entities call
and the two-bridge judge (``bridgerag:A`` … ``bridgerag:bridges2``), and
``--method bridgerag:A`` or ``--method bridgerag:condition=B,alpha=0.15`` picks one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hopindex.core.errors import InvalidInputError
from hopindex.methods.registry import registry


def method_variants(method: str) -> dict[str, dict[str, str]]:
    """The comparison variants query method ``method`` registers (none for a method
    unknown here: the run refuses it by name); a bare name with some means "compare
    these" in `hopindex eval`."""
    spec = registry().query_methods.get(method)
    if spec is None:
        return {}
    return {name: dict(params) for name, params in spec.eval_variants.items()}


@dataclass(frozen=True, slots=True)
class MethodSpec:
    label: str  # the report's row name
    method: str
    params: dict[str, str] = field(default_factory=dict)


def parse_param_pairs(pairs: Iterable[str], *, where: str = "--param") -> dict[str, str]:
    """``KEY=VALUE`` strings → a mapping; a later key wins over an earlier one."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"expected KEY=VALUE, got {pair!r}", where=where)
        params[key.strip()] = value.strip()
    return params


def parse_method_spec(text: str) -> MethodSpec:
    method, sep, rest = text.strip().partition(":")
    method = method.strip()
    if not method:
        raise InvalidInputError(f"name a method, got {text!r}", where="--method")
    if not sep:
        return MethodSpec(label=method, method=method)
    variants = method_variants(method)
    params: dict[str, str] = {}
    for token in (t.strip() for t in rest.split(",")):
        if token in variants:
            params.update(variants[token])
        elif "=" in token:
            params.update(parse_param_pairs([token], where=f"--method {text}"))
        else:
            known = f"; {method}'s variants: {', '.join(variants)}" if variants else ""
            raise InvalidInputError(f"expected KEY=VALUE or a variant name, got {token!r}"
                                    f"{known}", where=f"--method {text}")
    return MethodSpec(label=text.strip(), method=method, params=params)


def expand_method_specs(texts: Sequence[str]) -> list[MethodSpec]:
    """Each spec, a bare method with variants replaced by all of them, in their order."""
    specs: list[MethodSpec] = []
    for text in texts:
        name = text.strip()
        if variants := method_variants(name):
            specs.extend(MethodSpec(label=f"{name}:{variant}", method=name, params=params)
                         for variant, params in variants.items())
        else:
            specs.append(parse_method_spec(text))
    return specs
