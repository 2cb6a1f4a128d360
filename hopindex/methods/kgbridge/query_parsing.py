"""Validators of the partitioned-KG query replies: the plan and the sufficiency check.

``parse_plan`` and ``parse_sufficiency`` are ``complete_json`` callbacks: strict about
the shape (a ``ReplyShapeError`` names what is wrong, for the one repair attempt),
lenient where the meaning does not change (a single id for a list, a numeric id, a
missing reason). ``resolve_plan`` then holds the plan to the routed documents: ids
the model made up are dropped and named, at most two documents are primary, and a
plan left with no primary falls back to the top two routed documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.methods.kgbridge.parsing import ReplyShapeError, one_line

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
    ``auxiliary`` and ``reason`` may be missing."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'expected a JSON object with "primary", "auxiliary" and '
                              f'"reason", got {_kind(value)}')
    if "primary" not in value:
        raise ReplyShapeError(f'the reply has no "primary" key (keys: {sorted(value)})')
    primary = _ids(value["primary"], "primary")
    raw_auxiliary = value.get("auxiliary") or []
    if not isinstance(raw_auxiliary, list):
        raise ReplyShapeError(f"auxiliary must be a JSON array, got {_kind(raw_auxiliary)}")
    auxiliary = []
    for position, item in enumerate(raw_auxiliary):
        where = f"auxiliary[{position}]"
        if not isinstance(item, dict) or "doc_id" not in item:
            got = sorted(item) if isinstance(item, dict) else _kind(item)
            raise ReplyShapeError(f'{where} must be an object with "doc_id" and "entities", '
                                  f"got {got}")
        doc_id = _id(item["doc_id"], f"{where}.doc_id")
        names = item.get("entities") or []
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ReplyShapeError(f"{where}.entities must be a JSON array of names, got "
                                  f"{_kind(names)}")
        auxiliary.append(AuxiliaryPick(doc_id, tuple(
            dict.fromkeys(one_line(n) for n in names if n.strip()))))
    reason = value.get("reason") or ""
    if not isinstance(reason, str):
        raise ReplyShapeError(f'"reason" must be a string, got {_kind(reason)}')
    return PlanReply(primary=primary, auxiliary=tuple(auxiliary), reason=one_line(reason))


def parse_sufficiency(value: Any) -> Sufficiency:
    """``{"sufficient": bool, "findings": str, "sub_question": str}``; ``findings`` and
    ``sub_question`` may be missing or null."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'expected a JSON object with "sufficient", "findings" and '
                              f'"sub_question", got {_kind(value)}')
    sufficient = value.get("sufficient")
    if not isinstance(sufficient, bool):
        raise ReplyShapeError(f'"sufficient" must be true or false, got {_kind(sufficient)}')
    texts = []
    for field in ("findings", "sub_question"):
        text = value.get(field) or ""
        if not isinstance(text, str):
            raise ReplyShapeError(f'"{field}" must be a string, got {_kind(text)}')
        texts.append(one_line(text))
    return Sufficiency(sufficient=sufficient, findings=texts[0], sub_question=texts[1])


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


def _ids(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(dict.fromkeys(_id(item, f"{where}[{n}]") for n, item in enumerate(items)))


def _id(value: Any, where: str) -> str:
    # A numeric document id comes back as a JSON number from some models.
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ReplyShapeError(f"{where} must be a document id (a string), got {_kind(value)}")
    text = str(value).strip()
    if not text:
        raise ReplyShapeError(f"{where} is an empty document id")
    return text


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
