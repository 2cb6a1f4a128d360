"""``HOPINDEX_KGBRIDGE_*``: whether extraction gleans, which same-name entities are
adjudicated, when they link, and how much a query routes, reads and iterates."""

from __future__ import annotations

from dataclasses import dataclass

from hopindex.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class KgBridgeSettings:
    """Extraction, SAME_AS linking between the per-document graphs, and the query's budget.

    ``gleaning``: after each chunk's extraction, one more call asks the model for the
    entities it missed (and their relations), merged into the chunk's graph. On by
    default, as in the code published with the paper, which gleans every chunk; the
    paper itself does not mention it. It applies to documents extracted after it is
    set: a stored graph of unchanged text is not extracted again.

    A name found in fewer than ``min_docs`` or more than ``max_docs`` documents is not
    linked (the bounds of the code published with the paper: a name in very many
    documents is a common word or an ambiguous one, and its pairs grow quadratically).
    A candidate pair links when S_link = alpha·S_LLM + (1 - alpha)·S_emb reaches
    ``tau``; a pair whose embedding score is below ``min_embedding_score`` is not sent
    to the model. The default 0.0 is the lossless bound (tau - alpha)/(1 - alpha) of
    the default alpha and tau: a pair below it could not reach tau even with
    S_LLM = 1.

    The query reads ``route_top_k`` routed documents (the code published with the paper
    re-ranks ten), ``chunks_per_doc`` passages of each primary document, the linked
    summaries of at most ``expansion`` of its entities, and runs at most
    ``max_iterations`` iterations of its loop (a sufficiency check, then, when the
    context falls short, a refined query routed and planned again): with the first plan
    and the answer, at most 2 + 2·``max_iterations`` calls, eight by default.
    """

    gleaning: bool = True
    min_docs: int = 2
    max_docs: int = 10
    alpha: float = 0.7  # weight of the model's score against the embedding cosine
    tau: float = 0.7  # link threshold on the 0-1 scale (the paper's 7.0 of 10)
    min_embedding_score: float = 0.0
    route_top_k: int = 10
    chunks_per_doc: int = 2
    expansion: int = 5
    max_iterations: int = 3

    def __post_init__(self) -> None:
        problems = [f"HOPINDEX_KGBRIDGE_{name.upper()} must be {rule}, got {value}"
                    for name, value, ok, rule in (
                        ("min_docs", self.min_docs, 2 <= self.min_docs <= 1000, "2 to 1000"),
                        ("max_docs", self.max_docs, self.min_docs <= self.max_docs <= 1000,
                         f"from HOPINDEX_KGBRIDGE_MIN_DOCS ({self.min_docs}) to 1000"),
                        ("alpha", self.alpha, 0.0 <= self.alpha <= 1.0, "between 0 and 1"),
                        ("tau", self.tau, 0.0 <= self.tau <= 1.0, "between 0 and 1"),
                        ("min_embedding_score", self.min_embedding_score,
                         -1.0 <= self.min_embedding_score <= 1.0, "between -1 and 1"),
                        ("route_top_k", self.route_top_k, 1 <= self.route_top_k <= 100,
                         "1 to 100"),
                        ("chunks_per_doc", self.chunks_per_doc,
                         1 <= self.chunks_per_doc <= 10, "1 to 10"),
                        ("expansion", self.expansion, 0 <= self.expansion <= 50, "0 to 50"),
                        # The paper's T_max: the query's calls stay at most eight.
                        ("max_iterations", self.max_iterations,
                         0 <= self.max_iterations <= 3, "0 to 3"))
                    if not ok]
        if problems:
            raise ConfigError("; ".join(problems))

    def lossless_bound(self) -> float:
        """The lowest S_emb with which a pair can still reach tau (S_LLM at most 1)."""
        if self.alpha >= 1.0:
            return -1.0
        return (self.tau - self.alpha) / (1.0 - self.alpha)
