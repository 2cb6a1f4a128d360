"""Validators of the partitioned-KG query replies: the plan and the sufficiency check.

``parse_plan`` and ``parse_sufficiency`` are ``complete_json`` callbacks, read against
the declared shapes (``shapes``): lenient where the meaning does not change (a single
id for a list, a numeric id, a missing reason, "true" for true, counted as coerced);
a null or misfit element of a list is dropped and noted, and a ``ReplyShapeError``
(for the one repair attempt) names what is wrong when nothing usable remains.
``resolve_plan`` then holds the plan to the routed documents: ids
the model made up are dropped and named, at most two documents are primary, and a
plan left with no primary falls back to the top two routed documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.reply_shapes import (
    json_type_name,
    note_dropped,
    read_items,
    read_names,
    read_shape,
)
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.kgbridge.parsing import one_line
from hopindex.methods.kgbridge.shapes import (
    AUXILIARY_WHAT,
    PRIMARY_WHAT,
    AuxiliaryItem,
    DocIdItem,
    SufficiencyReply,
)

MAX_PRIMARY = 2


@dataclass(frozen=True, slots=True)
class AuxiliaryPick:
    """A document of which only the named entities are read."""

    doc_id: str
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PlanReply:
    """The plan as the model wrote it, ids not yet checked."""

    primary: tuple[str, ...]
    auxiliary: tuple[AuxiliaryPick, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    """The plan the query follows: every id a routed document; ``degraded`` says what
    was dropped or replaced, and why."""

    primary: tuple[str, ...]
    auxiliary: tuple[AuxiliaryPick, ...]
    reason: str
    degraded: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Sufficiency:
    sufficient: bool
    findings: str
    sub_question: str


def parse_plan(value: Any) -> PlanReply:
    """``{"primary": [ids], "auxiliary": [{"doc_id", "entities": [names]}], "reason"}``;
    ``auxiliary`` and ``reason`` may be missing, a reason that is not text is left out."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'kgbridge.plan: expected a JSON object with "primary", '
                              f'"auxiliary" and "reason", got {json_type_name(value)}')
    if "primary" not in value:
        raise ReplyShapeError(f'kgbridge.plan: the reply has no "primary" key '
                              f"(keys: {sorted(value)})")
    primary = _ids(value["primary"])
    auxiliary = []
    for item in read_items(value.get("auxiliary") or [], AuxiliaryItem, what=AUXILIARY_WHAT):
        doc_id = item.doc_id.strip()
        if not doc_id:
            note_dropped(f"{AUXILIARY_WHAT}: empty document id")
            continue
        names = read_names(item.entities, what=f"{AUXILIARY_WHAT} entities")
        auxiliary.append(AuxiliaryPick(doc_id, tuple(dict.fromkeys(
            one_line(n) for n in names if n.strip()))))
    reason = value.get("reason") or ""
    if not isinstance(reason, str):
        note_dropped(f"kgbridge.plan reason: {json_type_name(reason)}, not text")
        reason = ""
    return PlanReply(primary=primary, auxiliary=tuple(auxiliary), reason=one_line(reason))


def parse_sufficiency(value: Any) -> Sufficiency:
    """``{"sufficient": bool, "findings": str, "sub_question": str}``; ``findings`` and
    ``sub_question`` may be missing or null."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'kgbridge.sufficiency: expected a JSON object with '
                              f'"sufficient", "findings" and "sub_question", '
                              f'got {json_type_name(value)}')
    check = read_shape(value, SufficiencyReply, what="kgbridge.sufficiency")
    return Sufficiency(sufficient=check.sufficient, findings=one_line(check.findings or ""),
                       sub_question=one_line(check.sub_question or ""))


def resolve_plan(reply: PlanReply | None, routed: Sequence[str], *,
                 failure: str = "") -> Plan:
    """The plan over the ``routed`` documents (best first). ``reply`` None: the model's
    reply could not be read (``failure`` says why), and the top two routed documents
    are primary."""
    degraded: list[str] = []
    known = set(routed)
    fallback = tuple(routed[:MAX_PRIMARY])
    if reply is None:
        degraded.append(f"plan unreadable ({failure or 'no reply'}): the top "
                        f"{len(fallback)} routed documents are primary")
        return Plan(primary=fallback, auxiliary=(), reason="", degraded=tuple(degraded))
    unknown = [d for d in reply.primary if d not in known]
    degraded.extend(f"plan named primary document {d!r}, which was not routed: dropped"
                    for d in unknown)
    primary = [d for d in dict.fromkeys(reply.primary) if d in known]
    if len(primary) > MAX_PRIMARY:
        degraded.append(f"plan named {len(primary)} primary documents: the first "
                        f"{MAX_PRIMARY} kept")
        primary = primary[:MAX_PRIMARY]
    if not primary:
        primary = list(fallback)
        degraded.append(f"no routed document is primary in the plan: the top "
                        f"{len(fallback)} routed documents are")
    auxiliary: dict[str, list[str]] = {}
    for pick in reply.auxiliary:
        if pick.doc_id not in known:
            degraded.append(f"plan named auxiliary document {pick.doc_id!r}, which was not "
                            "routed: dropped")
        elif pick.doc_id not in primary:
            names = auxiliary.setdefault(pick.doc_id, [])
            names.extend(n for n in pick.entities if n not in names)
    return Plan(primary=tuple(primary),
                auxiliary=tuple(AuxiliaryPick(d, tuple(n)) for d, n in auxiliary.items()),
                reason=reply.reason, degraded=tuple(degraded))


def _ids(value: Any) -> tuple[str, ...]:
    """The primary ids, repeats kept once; one id given bare is a list of one."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    ids = [item.root.strip() for item in read_items(items, DocIdItem, what=PRIMARY_WHAT)]
    for _ in range(ids.count("")):
        note_dropped(f"{PRIMARY_WHAT}: empty document id")
    if items and not any(ids):
        raise ReplyShapeError(f"{PRIMARY_WHAT}: no usable document id among {len(items)}")
    return tuple(dict.fromkeys(i for i in ids if i))
