"""hopindex: multi-hop retrieval with cross-document reasoning done at index time."""

__version__ = "0.1.0"
