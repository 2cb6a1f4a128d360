"""The hopindex client: one typed interface over the service in this process
(``Client.local()``) and over the HTTP API (``Client.connect(url)``).

    from hopindex import Client

    with Client.local() as client:
        job = client.ingest("docs", ["corpus/"])
        result = client.query("docs", "Who directed the film?", k=5)
"""

from hopindex.api.client.models import (
    DocumentView,
    IndexBudget,
    IndexDescription,
    IndexLlmMode,
    IndexStatus,
    IndexSummary,
    IngestPlanView,
    OperationInfo,
    OutstandingWork,
    PlanCost,
    TransferCounts,
    WebhookInfo,
)
from hopindex.api.client.opening import open_local, open_remote
from hopindex.api.client.protocol import OPENERS, Client, IngestSource

OPENERS.update(local=open_local, connect=open_remote)

__all__ = ["Client", "DocumentView", "IndexBudget", "IndexDescription", "IndexLlmMode",
           "IndexStatus", "IndexSummary", "IngestPlanView", "IngestSource", "OperationInfo",
           "OutstandingWork", "PlanCost", "TransferCounts", "WebhookInfo"]
