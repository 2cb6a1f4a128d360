"""A bridgerag decision record as lines for a person (``hopindex query --trace``): the
bridge, entities, SVO queries, the pool with its scores in ranked order, the steps
that degraded (their fallbacks),
and where the record was persisted. Registered as the spec's ``describe_trace``."""

from __future__ import annotations

import textwrap
from typing import Any

_COLUMNS = ("#", "fused", "judge", "svo", "pool", "found by", "unit", "passage")


def describe_trace(record: dict[str, Any]) -> list[str]:
    if "pool" not in record:  # not a decision record (a trace of an early failure)
        return [f"{key}: {value}" for key, value in record.items()]
    judge = record.get("judge", {})
    params = record.get("params", {})
    lines = [f"decision record {record.get('record_id', '')}",
             f"  ranked by condition {record.get('ranked_by') or '-'} (asked "
             f"{params.get('condition')}; extraction {params.get('extraction')}; "
             f"alpha {params.get('alpha')})",
             f"  judge: {judge.get('status', '-')} ({judge.get('site', '-')}); "
             f"{record.get('llm_calls', 0)} LLM calls; "
             f"{record.get('vector_searches', 0)} vector searches"]
    for i, bridge in enumerate(record.get("bridges", []), start=1):
        lines.append(f"  bridge {i}: {bridge['label']} (score {bridge['score']:.4f})")
        lines.append(f"    unit {bridge['unit_id']}, doc {', '.join(bridge['doc_ids'])}")
    lines.append(f"  entities: {' | '.join(record.get('entities', [])) or '-'}")
    lines.extend(f"  SVO query {i}: {query}"
                 for i, query in enumerate(record.get("svo_queries", []), start=1))
    lines.extend(f"  fallback at {d['step']}: {d['reason']}"
                 for d in record.get("degraded", []))
    # A record persisted before ``degraded`` replaced ``fallbacks``.
    lines.extend(f"  fallback at {f['step']} -> {f['to']}: {f['reason']}"
                 for f in record.get("fallbacks", []))
    pool = sorted(record.get("pool", []), key=lambda p: p["rank"])
    lines.append(f"  pool ({len(pool)} candidates, best first)")
    rows = [list(_COLUMNS)] + [[
        str(entry["rank"]), f"{entry['fused']:.3f}",
        "-" if entry["judge_score"] is None else f"{entry['judge_score']:g}",
        f"{entry['svo_score']:.3f}", f"{entry['pool_score']:.3f}",
        ",".join(entry["found_by"]), entry["unit_id"][:8],
        textwrap.shorten(entry["label"], width=48)] for entry in pool]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines.extend("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                 .rstrip() for row in rows)
    top = record.get("top", [])
    lines.append(f"  top {len(top)}: " + "; ".join(
        f"{t['rank']}. {t['title'] or t['doc_id']}" for t in top))
    if record.get("persisted_to"):
        lines.append(f"  persisted to {record['persisted_to']}")
    return lines
