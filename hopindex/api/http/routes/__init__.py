"""The API's routes, one module per resource; ``ALL_ROUTES`` is what the app serves."""

from __future__ import annotations

from hopindex.api.http import metrics
from hopindex.api.http.routes import (
    docs,
    documents,
    events,
    export,
    indexes,
    jobs,
    links,
    operations,
    query,
    service,
    webhooks,
)
from hopindex.api.http.routing import Route

ALL_ROUTES: list[Route] = [
    *indexes.ROUTES, *documents.ROUTES, *query.ROUTES, *links.ROUTES, *operations.ROUTES,
    *jobs.ROUTES, *events.ROUTES, *export.ROUTES, *webhooks.ROUTES, *service.ROUTES,
    *docs.ROUTES, *metrics.ROUTES,
]
