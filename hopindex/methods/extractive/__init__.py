"""``extractive``: hopindex's LLM-free bridges (docs/methods.md, "Extractive bridges").

Stage 1 keeps passages and their entities; stage 2 writes one cross-document
bridge unit per entity shared by 2..tau documents; a query fuses dense and
BM25 hits over both and expands bridge hits to their source passages.
"""

from hopindex.methods.extractive.query import ExtractiveMethod

__all__ = ["ExtractiveMethod"]
