"""The OpenAPI document is true to the app: the same routes, the same query
parameters, the same public routes, the server's own limits, and a document that
schemathesis (an OpenAPI 3.1 validator) loads without a complaint."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import schemathesis

from hopindex.api.http.event_tokens import TOKEN_PARAM
from hopindex.api.http.openapi.spec import build_spec
from hopindex.api.http.routes import ALL_ROUTES
from hopindex.api.http.routing import Credential, Guard
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.models import Job, JobKind
from hopindex.core.settings import Settings
from hopindex.methods.base import QueryUsage

SETTINGS = Settings(data_dir=Path("unused")).resolved()
SPEC = build_spec(SETTINGS)


def operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(method.upper(), path): op for path, item in spec["paths"].items()
            for method, op in item.items() if method != "parameters"}


def parameters(spec: dict[str, Any], path: str, method: str, where: str) -> set[str]:
    item = spec["paths"][path]
    found = item.get("parameters", []) + item[method.lower()].get("parameters", [])
    return {p["name"] for p in found if p["in"] == where}


def component(schema: dict[str, Any]) -> dict[str, Any]:
    """The component a ``$ref`` names (``schema`` itself when it is no reference)."""
    if "$ref" not in schema:
        return schema
    return SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]


def test_every_route_is_in_the_spec_and_nothing_else() -> None:
    """The app's (method, path) pairs and the spec's are the same set."""
    assert {(r.method, r.path) for r in ALL_ROUTES} == set(operations(SPEC))


def test_query_parameters_and_public_routes_agree() -> None:
    """Each route reads exactly the query parameters the spec lists for it, and the
    routes that need no key are the ones the spec marks with empty security."""
    for route in ALL_ROUTES:
        assert set(route.query) == parameters(SPEC, route.path, route.method, "query"), route
        op = operations(SPEC)[(route.method, route.path)]
        assert (op.get("security") == []) == (route.guard is Guard.PUBLIC), route


def test_path_parameters_are_declared() -> None:
    """Every {placeholder} in a path is a declared path parameter."""
    for method, path in operations(SPEC):
        placeholders = {part[1:-1] for part in path.split("/") if part.startswith("{")}
        assert placeholders == parameters(SPEC, path, method, "path"), path


def test_published_limits_are_the_servers() -> None:
    """Query length and documents per request come from the settings the app runs with,
    and IndexRAG is offered only by a server with an LLM."""
    small = replace(SETTINGS, api_max_query_chars=77, api_max_documents=9)
    spec = build_spec(small)
    schemas = spec["components"]["schemas"]
    assert schemas["QueryRequest"]["properties"]["question"]["maxLength"] == 77
    body = spec["paths"]["/v1/indexes/{name}/documents"]["post"]["requestBody"]["content"]
    assert body["application/json"]["schema"]["anyOf"][0]["maxItems"] == 9
    # null: the default method, as if left out.
    assert schemas["CreateIndex"]["properties"]["method"]["enum"] == ["extractive", None]
    with_llm = build_spec(replace(SETTINGS, llm_model="m"))["components"]["schemas"]
    assert with_llm["CreateIndex"]["properties"]["method"]["enum"] == [
        "compactrag", "extractive", "indexrag", "kgbridge", "sirerag", None]


def test_operation_ids_are_unique() -> None:
    ids = [op["operationId"] for op in operations(SPEC).values()]
    assert len(ids) == len(set(ids)) and "createIndex" in ids


def test_every_reference_resolves() -> None:
    """Every $ref names a component that exists."""
    text = json.dumps(SPEC)
    names = set(SPEC["components"]["schemas"])
    prefix = '"$ref": "#/components/schemas/'
    refs = {chunk.split('"', 1)[0] for chunk in text.split(prefix)[1:]}
    assert refs and refs <= names


def test_schemathesis_loads_every_operation() -> None:
    """The document is valid OpenAPI 3.1 to schemathesis: every operation loads."""
    schema = schemathesis.openapi.from_dict(SPEC)
    results = list(schema.get_all_operations())
    assert len(results) == len(operations(SPEC))
    for result in results:
        result.ok()  # raises on an operation schemathesis cannot read


def test_event_tokens_are_declared_where_routes_take_them() -> None:
    """The operations listing the ``eventToken`` scheme are exactly the routes that take
    ``?token=``, and the scheme names that query parameter."""
    for route in ALL_ROUTES:
        op = operations(SPEC)[(route.method, route.path)]
        takes = {"eventToken": []} in op.get("security", [])
        assert takes == (route.credential is Credential.API_KEY_OR_EVENT_TOKEN), route
    scheme = SPEC["components"]["securitySchemes"]["eventToken"]
    assert (scheme["in"], scheme["name"]) == ("query", TOKEN_PARAM)


def test_embedding_usage_is_declared_where_responses_carry_it() -> None:
    """A query's ``usage.embedding_tokens`` and a job's ``embedding`` figures (requests,
    tokens, cost when priced) are in the schemas, with the types the records write."""
    schemas = SPEC["components"]["schemas"]
    usage = component(schemas["QueryResult"]["properties"]["usage"])["properties"]
    assert "embedding_tokens" in QueryUsage().as_dict()
    assert usage["embedding_tokens"]["type"] == "integer"
    job = Job(job_id="j", index="i", kind=JobKind.INGEST,
              embedding=EmbeddingUsage(requests=1, tokens=7, cost=0.1))
    declared = component(schemas["Job"]["properties"]["embedding"])["properties"]
    assert set(job.as_dict()["embedding"]) == set(declared) == {"requests", "tokens", "cost"}
