"""``sirerag``: similarity and relatedness trees ("SiReRAG: Indexing Similar and Related
Information for Multihop Reasoning", arXiv 2412.06206).

Both trees are built by recursive summaries over clusters of their nodes (passages for
the similarity tree, entity-grouped proposition aggregates for the relatedness tree);
``clustering`` holds the clustering step they share; ``prompts`` and ``parsing`` the
proposition and summary calls. The index method itself (phases, query) is not built
yet, so nothing is registered.
"""
