"""Which units a query method reads from an index, by the kinds the index holds.

A method names tiers of kinds in order of preference; it reads the first tier
whose first kind the index holds. ``ircot`` and ``bridgerag`` read an index of
facts (AKUs and bridging facts) through its facts, and any other index (passages
and extractive bridges, say) through its passages.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.protocols import UnitFilter
from hopindex.core.models import UnitKind

FACTS = (UnitKind.AKU, UnitKind.BRIDGE)
PASSAGES = (UnitKind.PASSAGE,)


def preferred_filter(held: frozenset[UnitKind], tiers: Sequence[tuple[UnitKind, ...]]
                     ) -> UnitFilter | None:
    """The first tier whose first kind is held, as a filter; None (every unit) when the
    held kinds are unknown or no tier matches."""
    for tier in tiers:
        if tier[0] in held:
            return UnitFilter(kinds=tier)
    return None
