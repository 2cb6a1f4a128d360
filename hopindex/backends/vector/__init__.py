"""Dense vector stores behind the ``VectorStore`` protocol (embedded: Qdrant Edge)."""
