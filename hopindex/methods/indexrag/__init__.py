"""``indexrag``: index-time bridging facts (METHODS.md, "IndexRAG"), the pure parts.

Stage 1 turns each document chunk into atomic question-answer pairs and an entity
list; the chunk's answers form one AKU unit. Stage 2 asks, per bridge entity, for
facts that combine two or more documents; each becomes a bridge unit. A query
keeps every AKU but at most ``k_b`` bridging facts (balanced selection).

This package holds the prompts, reply validators, unit builders and selection;
orchestration (tasks, storage) lives elsewhere so these stay testable offline.
"""
