"""``bridgerag``: a bridge-conditioned tripartite judge at query time (docs/methods.md,
"BridgeRAG").

Hop-1 retrieval gives the bridge; SVO queries and two entities widen the hop-2
pool; one batched LLM call scores every candidate given the question and the
bridge, s(q, b, c); PIT fusion with the SVO similarity ranks the pool. Needs no
index-time work beyond embeddings, so it runs over any index.

Modules: ``params`` (knobs and ablation conditions), ``prompts``, ``parsing``,
``svo`` and ``entities`` (the two asks), ``searches`` (hop-2 ANN passes), ``pool``,
``pit``, ``judge`` (in-process or on the judge queue), ``records`` (decision
records), ``report`` (a decision record for people), ``query`` (the pipeline,
registered as a query method).
"""

from hopindex.core.models import UnitKind
from hopindex.methods.bridgerag.judge import judge_task
from hopindex.methods.bridgerag.params import EVAL_VARIANTS, BridgeRagParams, BridgeRagSettings
from hopindex.methods.bridgerag.query import METHOD, BridgeRagMethod
from hopindex.methods.bridgerag.report import describe_trace
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec

__all__ = ["BridgeRagMethod", "register"]


def register(registry: MethodRegistry) -> None:
    registry.add_query_method(QueryMethodSpec(
        name=METHOD, factory=BridgeRagMethod,
        reads=frozenset({UnitKind.PASSAGE, UnitKind.AKU}),
        llm_use=LlmUse.REQUIRED, settings_type=BridgeRagSettings,
        options_schema=BridgeRagParams.json_schema(), describe_trace=describe_trace,
        tasks={"judge": judge_task}, eval_variants=EVAL_VARIANTS,
        summary="hop-1 bridge, SVO and entity hop-2 pool, one batched bridge-conditioned "
                "judge call, PIT fusion; evidence only"))
