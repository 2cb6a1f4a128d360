"""Export files of format version 1, as the previous hopindex wrote them.

Version 1 carried two things the stores now keep as method groups and records: a
document line's ``analysis`` (its NLP analysis) and ``bridge`` lines (an entity's
bridge units). They are read into what the stores hold now, the way the stores'
own layout upgrades move them (``hopindex/backends/state/groups.py``): an analysis
becomes the document's record in ``ANALYSIS_NAMESPACE``, unchanged, and a bridge a
group of ``BRIDGE_NAMESPACE`` whose members are the documents its units cite.
"""

from __future__ import annotations

from typing import Any

from hopindex.backends.protocols import UnitStore
from hopindex.backends.state.groups import ANALYSIS_NAMESPACE, BRIDGE_NAMESPACE
from hopindex.core.models import Group

VERSION = 1
# The line type version 1 has and version 2 does not: an entity's bridge, which is a
# group now.
GROUP_LINE = "bridge"
RECORD_TYPES = (GROUP_LINE,)
# Version 1 counted bridge lines where version 2 counts groups.
_COUNT_NAMES = {"bridges": "groups"}


def analysis_record(line: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The (namespace, value) record a version-1 document line's analysis becomes, if it
    has one: the JSON object as it was, ``{"s": [[start, end], ...], "e": [[text, label,
    start, end], ...]}``."""
    analysis = line.get("analysis")
    if analysis is None:
        return None
    if not isinstance(analysis, dict) or not isinstance(analysis.get("s"), list) \
            or not isinstance(analysis.get("e"), list):
        raise TypeError("a document's analysis must be an object with lists 's' and 'e'")
    return ANALYSIS_NAMESPACE, analysis


def group_of_line(units: UnitStore, index: str, line: dict[str, Any]) -> Group:
    """The group a version-1 bridge line becomes; its units must be imported already."""
    entity = line["entity"]
    unit_ids = line["unit_ids"]
    if not isinstance(entity, str) or not isinstance(unit_ids, list) \
            or not all(isinstance(u, str) for u in unit_ids):
        raise TypeError("a bridge line needs an entity string and a list of unit ids")
    members = {d for unit in units.get_units(index, unit_ids) for d in unit.source_doc_ids}
    return Group(namespace=BRIDGE_NAMESPACE, key=entity, unit_ids=tuple(unit_ids),
                 members=tuple(sorted(members)))


def current_counts(counts: dict[str, Any]) -> dict[str, Any]:
    """A version-1 end line's counts under version 2's names."""
    return {_COUNT_NAMES.get(name, name): value for name, value in counts.items()}
