"""``indexrag``: index-time bridging facts (docs/methods.md, "IndexRAG"), the pure parts.

Stage 1 turns each document chunk into atomic question-answer pairs and an entity
list; the chunk's answers form one AKU unit. Stage 2 asks, per bridge entity, for
facts that combine two or more documents; each becomes a bridge unit. A query
keeps every AKU but at most ``k_b`` bridging facts (balanced selection).

The prompts, reply validators, unit builders and selection are pure and testable
offline; ``indexing`` makes a batch's calls for the stage tasks, and ``query``
registers the query method.
"""

from hopindex.methods.indexrag.query import IndexRagMethod

__all__ = ["IndexRagMethod"]
