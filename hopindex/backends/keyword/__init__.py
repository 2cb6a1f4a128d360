"""BM25 keyword indexes behind the ``KeywordIndex`` protocol (embedded: tantivy)."""
