"""``bridgerag``: a bridge-conditioned tripartite judge at query time (docs/methods.md,
"BridgeRAG").

Hop-1 retrieval gives the bridge; SVO queries and two entities widen the hop-2
pool; one batched LLM call scores every candidate given the question and the
bridge, s(q, b, c); PIT fusion with the SVO similarity ranks the pool. Needs no
index-time work beyond embeddings, so it runs over any index.

Modules: ``params`` (knobs and ablation conditions), ``prompts``, ``parsing``,
``svo`` and ``entities`` (the two asks), ``searches`` (hop-2 ANN passes), ``pool``,
``pit``, ``judge`` (in-process or on the judge queue), ``records`` (decision
records), ``query`` (the pipeline, registered as a query method).
"""

from hopindex.methods.bridgerag.query import BridgeRagMethod

__all__ = ["BridgeRagMethod"]
