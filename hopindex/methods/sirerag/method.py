"""``sirerag`` as an index method: propositions, aggregates, and the two trees.

1. ``propositions`` (documents): passages, and per chunk one proposition call or the
   paper's three extraction calls (``HOPINDEX_SIRERAG_EXTRACTION``).
2. ``aggregates`` (groups, no LLM): each entity's propositions as one unit.
3. ``similarity`` and ``relatedness`` (levels): the trees over passages and over
   aggregates, one summary call per cluster. A tree is global, so it is built by the
   index's first job and then only on request (``hopindex rebuild``) or once
   ``rebuild_share`` of the documents changed; other jobs mark it stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.core.errors import ConfigError
from hopindex.core.models import Document, UnitKind
from hopindex.methods.plugin import (
    CallBound,
    DocumentCalls,
    DocumentsPhase,
    Forgotten,
    GroupsPhase,
    LevelsPhase,
    LlmUse,
    Phase,
    PhaseContext,
    PlanContext,
    Rebuild,
)
from hopindex.methods.sirerag.aggregates import build_aggregates
from hopindex.methods.sirerag.extraction import Extraction
from hopindex.methods.sirerag.planning import plan_proposition_calls
from hopindex.methods.sirerag.propositions import AGGREGATES, METHOD, PROPOSITIONS, run_propositions
from hopindex.methods.sirerag.trees import Tree, tree_phase


@dataclass(frozen=True, slots=True)
class SiReRagSettings:
    """``HOPINDEX_SIRERAG_*``: how propositions are extracted, the trees' depth and
    clustering, when they are rebuilt, and how many pool nodes a query retrieves."""

    # ``one_call`` (one prompt per chunk) or ``three_step`` (the paper's Figs. 6-8:
    # coreference rewriting, entities, facts with triplets; three calls per chunk).
    # One call stays the default: the paper ran neither prompt set at indexing time but
    # a fine-tuned 7B model distilled from the three, which is one call per chunk.
    extraction: str = Extraction.ONE_CALL.value

    levels: int = 3  # summary levels per tree (the authors' depth)
    seed: int = 0  # UMAP's and the mixture's: the same index gives the same trees
    max_cluster_tokens: int = 10_000  # a cluster above it is clustered again
    # Mixtures fitted at once while clustering a level (threads of the process that
    # plans it); the trees do not depend on it.
    cluster_threads: int = 2
    # Rebuild the trees in a job after which this share of the documents changed since
    # their last build; 0: only `hopindex rebuild` does.
    rebuild_share: float = 0.2
    top_k: int = 20  # pool nodes a query retrieves (the authors' collapsed top 20)

    def __post_init__(self) -> None:
        problems = [f"HOPINDEX_SIRERAG_{name.upper()} must be {rule}, got {value}"
                    for name, value, ok, rule in (
                        ("levels", self.levels, 1 <= self.levels <= 8, "1 to 8"),
                        ("max_cluster_tokens", self.max_cluster_tokens,
                         self.max_cluster_tokens >= 100, "at least 100"),
                        ("cluster_threads", self.cluster_threads,
                         1 <= self.cluster_threads <= 32, "1 to 32"),
                        ("rebuild_share", self.rebuild_share, 0 <= self.rebuild_share <= 1,
                         "between 0 and 1"),
                        ("top_k", self.top_k, 1 <= self.top_k <= 200, "1 to 200"),
                        ("extraction", self.extraction,
                         self.extraction in set(Extraction), " or ".join(Extraction)))
                    if not ok]
        if problems:
            raise ConfigError("; ".join(problems))


def _rebuild_share(settings: SiReRagSettings) -> float:
    return settings.rebuild_share


def _tree(tree: Tree) -> LevelsPhase:
    plan, build = tree_phase(tree)
    return LevelsPhase(name=tree.value, namespace=tree.namespace, plan=plan, build=build,
                       writes=frozenset({UnitKind.SUMMARY}), rebuild=Rebuild.ON_REQUEST,
                       rebuild_share=_rebuild_share)


class SiReRagIndexMethod:
    name = METHOD
    llm_use = LlmUse.REQUIRED
    settings_type = SiReRagSettings
    writes = frozenset({UnitKind.PASSAGE, UnitKind.PROPOSITION_AGGREGATE, UnitKind.SUMMARY})
    default_queries = ("sirerag", "naive")
    phases: tuple[Phase, ...] = (
        DocumentsPhase(name="propositions", run=run_propositions,
                       writes=frozenset({UnitKind.PASSAGE})),
        GroupsPhase(name="aggregates", namespace=AGGREGATES, build=build_aggregates,
                    writes=frozenset({UnitKind.PROPOSITION_AGGREGATE})),
        _tree(Tree.SIMILARITY),
        _tree(Tree.RELATEDNESS),
    )

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        """Drop the documents' propositions and mentions; the aggregates they fed are
        rebuilt (the trees are marked stale by the runtime)."""
        state, index = context.state, context.index
        touched = state.groups_of_documents(index, AGGREGATES, doc_ids)
        touched |= state.delete_mentions(index, doc_ids)
        state.delete_records(index, list(doc_ids), namespace=PROPOSITIONS)
        return Forgotten(touched={AGGREGATES: touched})

    def plan_document_calls(self, context: PlanContext, document: Document
                            ) -> DocumentCalls | None:
        if context.phase == f"{METHOD}.propositions":
            return plan_proposition_calls(context, document)
        return None

    def bound_group_calls(self, context: PlanContext, documents: Sequence[Document]
                          ) -> CallBound | None:
        if context.phase == f"{METHOD}.aggregates":
            return CallBound(max_calls=0, basis="aggregates call no LLM")
        return None  # a tree's summary calls depend on how its clusters fall
