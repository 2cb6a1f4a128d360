"""The groups phase of ``kgbridge``: verified SAME_AS links between per-document graphs.

A key is a normalised entity name. Its candidates are the entities of that key in
different documents, when the name is found in ``min_docs`` to ``max_docs``
documents; every unordered cross-document pair is a candidate. A pair scores
S_link = alpha·S_LLM + (1 - alpha)·S_emb, where S_emb is the cosine of the two
``entity_summary`` units' stored vectors (the documents phase's units are embedded
before this phase runs) and S_LLM the model's 0-10 verdict divided by 10; a pair whose
S_emb is below ``min_embedding_score`` is not sent to the model. Pairs at or above
tau are the key's links, kept as a record (namespace ``kgbridge.links``); the phase
writes no unit.

A link rejected by hand (a record in ``kgbridge.rejected``, keyed by link id) is never
linked or adjudicated again. ``list_links`` and ``reject_link`` are what the
``links.list`` and ``links.reject`` operations (``operations``) call.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hopindex.backends.protocols import StateStore, Vector
from hopindex.core.errors import HopindexError, InvalidInputError, NotFoundError
from hopindex.core.ids import sha256_hex
from hopindex.core.logging import get_logger
from hopindex.core.models import ItemError
from hopindex.methods.kgbridge.graphs import GRAPHS, LINKS
from hopindex.methods.kgbridge.parsing import Verdict, entity_key, parse_verdict
from hopindex.methods.kgbridge.prompts import PairSide, adjudicate_request
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.plugin import GroupsResult, PhaseContext

log = get_logger(__name__)

REJECTED = "kgbridge.rejected"  # link id → who rejected it and when
LINKED = "linked"
REJECTED_STATE = "rejected"


class UnknownLinkError(NotFoundError):
    """A link id that no stored link carries."""


@dataclass(frozen=True, slots=True)
class End:
    """One document's entity of the key."""

    doc_id: str
    key: str
    name: str
    unit_id: str
    summary: str
    title: str

    def as_dict(self) -> dict[str, str]:
        return {"doc_id": self.doc_id, "unit_id": self.unit_id, "name": self.name}

    def side(self) -> PairSide:
        return PairSide(name=self.name, title=self.title, summary=self.summary)


@dataclass(frozen=True, slots=True)
class Pair:
    key: str
    a: End
    b: End
    link_id: str
    s_emb: float


def link_id(a: tuple[str, str], b: tuple[str, str]) -> str:
    """A function of the two (doc_id, entity key) ends, whichever order they come in."""
    first, second = sorted((a, b))
    return sha256_hex("\x1f".join((*first, *second)))[:32]


def s_link(settings: KgBridgeSettings, s_llm: float, s_emb: float) -> float:
    return settings.alpha * s_llm + (1.0 - settings.alpha) * s_emb


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norm == 0.0:
        return 0.0
    return max(-1.0, min(1.0, math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm))


def pair_cosines(vectors: Sequence[Vector]) -> npt.NDArray[np.float64]:
    """Every two vectors' cosine at once (``cosine`` pair by pair in pure Python was
    most of the links phase's own time on a thousand documents); 0 with a zero vector."""
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    # The products of float32 components are exact in float64: two vectors whose
    # products cancel out score exactly 0, not the rounding noise that normalising them
    # first leaves, which would drop half of them below the lossless bound of 0.
    products = np.outer(norms, norms)
    scores: npt.NDArray[np.float64] = np.clip(np.divide(
        matrix @ matrix.T, products, out=np.zeros_like(products), where=products > 0.0),
        -1.0, 1.0)
    return scores


def candidate_ends(context: PhaseContext, keys: Sequence[str]) -> dict[str, list[End]]:
    """Each key's ends, by document id, when its name is in ``min_docs`` to
    ``max_docs`` documents; no entry for any other key."""
    settings: KgBridgeSettings = context.settings
    mentions = context.state.mentions_of_entities(context.index, list(keys))
    docs_of = {key: sorted({m.doc_id for m in mentions.get(key, [])}) for key in keys}
    # Departure from the paper (docs/methods.md, kgbridge): only names in MIN_DOCS..MAX_DOCS
    # documents are candidates (the published code's bounds); the paper pairs every name.
    eligible = {k: d for k, d in docs_of.items()
                if settings.min_docs <= len(d) <= settings.max_docs}
    doc_ids = sorted({d for found in eligible.values() for d in found})
    graphs = context.state.get_records(context.index, GRAPHS, doc_ids)
    titles = {d.doc_id: d.title for d in context.state.get_documents(context.index, doc_ids)}
    ends: dict[str, list[End]] = {}
    for key, found in eligible.items():
        for doc_id in found:
            entity = next((e for e in graphs.get(doc_id, {}).get("entities", [])
                           if e["key"] == key), None)
            if entity is not None:
                ends.setdefault(key, []).append(End(
                    doc_id=doc_id, key=key, name=str(entity["name"]),
                    unit_id=str(entity["unit_id"]), summary=str(entity["summary"]),
                    title=titles.get(doc_id, "")))
    return {k: v for k, v in ends.items() if len(v) >= 2}


def build_links(context: PhaseContext, keys: list[str]) -> GroupsResult:
    """Each key's links as its record; a key with no candidate pair loses its record.
    The model is asked about every pair of the batch at once."""
    started = time.perf_counter()
    settings: KgBridgeSettings = context.settings
    state, index = context.state, context.index
    ends = candidate_ends(context, keys)
    # Departure from the paper (docs/methods.md, kgbridge): S_emb is the cosine of the entity
    # units' stored vectors, whose text is "<name> (<type>): <summary>", not S_e alone:
    # the units are embedded anyway, and embedding the summaries again would double it.
    vectors = {r.unit_id: r.vector for r in context.vectors.get_vectors(
        index, sorted({e.unit_id for found in ends.values() for e in found}))}
    result = GroupsResult()
    pairs: dict[str, list[Pair]] = {}
    for key, found in ends.items():
        missing = [e.unit_id for e in found if e.unit_id not in vectors]
        if missing:
            result.errors.append(ItemError(item=key, stage=context.phase, reason=(
                f"entity summary units not embedded yet: {', '.join(missing)}")))
            continue
        scores = pair_cosines([vectors[e.unit_id] for e in found])
        pairs[key] = [Pair(key, found[i], found[j],
                           link_id((found[i].doc_id, key), (found[j].doc_id, key)),
                           float(scores[i, j]))
                      for i, j in itertools.combinations(range(len(found)), 2)]
    every = [p for found in pairs.values() for p in found]
    rejected = set(state.get_records(index, REJECTED, [p.link_id for p in every]))
    asked = [p for p in every if p.link_id not in rejected
             and p.s_emb >= settings.min_embedding_score]
    outcomes = (context.require_llm().complete_json_many(
        [adjudicate_request(p.a.side(), p.b.side()) for p in asked], parse_verdict,
        context.usage) if asked else [])
    verdicts: dict[str, Verdict | HopindexError] = {
        p.link_id: outcome for p, outcome in zip(asked, outcomes, strict=True)}
    records: dict[str, dict[str, Any]] = {}
    for key, of_key in pairs.items():
        failures = [(p, v) for p in of_key
                    if isinstance(v := verdicts.get(p.link_id), HopindexError)]
        if failures:
            # The key keeps its previous links: the next job adjudicates it again.
            pair, error = failures[0]
            result.errors.append(ItemError(item=key, stage=context.phase, reason=(
                f"adjudication of {pair.a.doc_id} / {pair.b.doc_id} failed: {error}")))
            continue
        records[key] = key_record(settings, of_key, rejected, verdicts)
    if records:
        # A link rejected while the model was being asked must not come back.
        late = set(state.get_records(index, REJECTED, [
            x["link_id"] for r in records.values() for x in r["links"]]))
        for record in records.values():
            kept = [x for x in record["links"] if x["link_id"] not in late]
            record["rejected"] += len(record["links"]) - len(kept)
            record["links"] = kept
        state.put_records(index, LINKS, records)
    failed = {e.item for e in result.errors}
    gone = [k for k in keys if k not in records and k not in failed]
    if gone:
        state.delete_records(index, gone, namespace=LINKS)
    log.info("links_adjudicated", index=index, keys=len(keys), pairs=len(every),
             adjudicated=len(asked), rejected=sum(r["rejected"] for r in records.values()),
             linked=sum(len(r["links"]) for r in records.values()), failed=len(failed),
             duration_s=round(time.perf_counter() - started, 3))
    return result


def key_record(settings: KgBridgeSettings, pairs: Sequence[Pair], rejected: set[str],
               verdicts: Mapping[str, Verdict | HopindexError]) -> dict[str, Any]:
    """A key's record: its links at or above tau, and how its candidates fared."""
    links = []
    for pair in pairs:
        verdict = verdicts.get(pair.link_id)
        if not isinstance(verdict, Verdict):
            continue
        score = s_link(settings, verdict.score, pair.s_emb)
        # Departure from the paper (docs/methods.md, kgbridge): a link at S_link >= tau (the
        # published code's test), where the paper writes S_link > tau.
        if score >= settings.tau:
            links.append({"link_id": pair.link_id, "a": pair.a.as_dict(),
                          "b": pair.b.as_dict(), "s_emb": round(pair.s_emb, 6),
                          "s_llm": round(verdict.score, 6), "s_link": round(score, 6),
                          "reason": verdict.reason, "state": LINKED})
    skipped = sum(1 for p in pairs if p.link_id in rejected)
    adjudicated = sum(1 for p in pairs if isinstance(verdicts.get(p.link_id), Verdict))
    return {"links": links, "candidates": len(pairs),
            "prefiltered": len(pairs) - skipped - adjudicated, "adjudicated": adjudicated,
            "rejected": skipped}


def list_links(state: StateStore, index: str, entity: str | None = None) -> list[dict[str, Any]]:
    """The stored links (each with its ``entity`` key), of one entity name or of every
    name the index's documents mention, by entity then link id."""
    if entity is not None:
        keys = [entity_key(entity)]
    else:
        mentions = state.mentions_of_documents(index, sorted(state.document_hashes(index)))
        keys = sorted({m.entity for found in mentions.values() for m in found})
    records = state.get_records(index, LINKS, keys) if keys else {}
    return [{"entity": key, **link} for key in sorted(records)
            for link in sorted(records[key]["links"], key=lambda x: str(x["link_id"]))]


def reject_link(state: StateStore, index: str, link_id: str, by: str) -> dict[str, Any]:
    """Reject a link for good: it leaves its entity's record now, and the links phase
    never stores or adjudicates it again. Rejecting it twice keeps the first rejection."""
    if not by.strip():
        raise InvalidInputError("say who rejects the link", where="by")
    earlier = state.get_records(index, REJECTED, [link_id]).get(link_id)
    if earlier is not None:
        return {"link_id": link_id, "state": REJECTED_STATE, **earlier}
    found = next((link for link in list_links(state, index) if link["link_id"] == link_id),
                 None)
    if found is None:
        raise UnknownLinkError(f"index {index!r} has no link {link_id!r}")
    rejection = {"rejected_at": datetime.now(UTC).isoformat(timespec="seconds"),
                 "by": by.strip()}
    state.put_records(index, REJECTED, {link_id: rejection})
    key = str(found["entity"])
    record = state.get_records(index, LINKS, [key]).get(key)
    if record is not None:
        record["links"] = [x for x in record["links"] if x["link_id"] != link_id]
        record["rejected"] = int(record.get("rejected", 0)) + 1
        state.put_records(index, LINKS, {key: record})
    log.info("link_rejected", index=index, link_id=link_id, entity=key, by=rejection["by"])
    return {**found, "state": REJECTED_STATE, **rejection}
