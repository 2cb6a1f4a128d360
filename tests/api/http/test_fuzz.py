"""A bounded schemathesis run against a real server: generated requests, valid and
invalid, for every operation in the spec. No answer may be a 5xx or disagree with the
spec (status, content type, headers, body schema); invalid input must be refused and
valid input accepted. A valid request may still be a 422 when it needs an LLM this
server has none of (the spec documents it), and a valid upload may hold documents the
readers refuse (a 400 naming the line). The event stream is fuzzed in its ``backlog``
mode, since a following stream never ends."""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase

from hopindex.api.http.openapi.spec import build_spec
from hopindex.core.settings import Settings
from tests.api.http.conftest import KEYS, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

MAX_EXAMPLES = 8
AUTH = {"Authorization": f"Bearer {KEYS['write']}"}
SPEC = build_spec(Settings())
OPERATIONS = sorted((method.upper(), path) for path, item in SPEC["paths"].items()
                    for method in item if method != "parameters")
# Negative cases need something to make invalid: parameters or a body.
WITH_INPUT = {(m, p) for m, p in OPERATIONS
              if "{" in p or "parameters" in SPEC["paths"][p][m.lower()]
              or "requestBody" in SPEC["paths"][p][m.lower()]}
FIXED_QUERY = {("GET", "/v1/events"): {"mode": "backlog"}}
# Valid queries go to an index that exists, so they run the real query path.
FUZZ_INDEX = "fuzz"
FIXED_PATH = {("POST", "/v1/indexes/{name}/query"): {"name": FUZZ_INDEX}}


@pytest.fixture(scope="module")
def fuzz_schema(make_api: ApiFactory) -> Any:
    # Its auth probes send hundreds of requests without a valid key from one address.
    api = make_api(api_auth_failures_per_minute=0)
    _, docs = sample_documents(limit=3, question=2)
    job = api.call("POST", f"/v1/indexes/{FUZZ_INDEX}/documents", json=docs).json()
    assert api.wait_job(job["job_id"])["state"] == "succeeded"
    accepted = ["2xx", "401", "403", "404", "409", "422", "429"]
    config = schemathesis.Config.from_dict({
        "checks": {"positive_data_acceptance": {"expected-statuses": accepted}},
        # A schema-valid upload can still hold invalid documents (a file type no reader
        # takes, a line that is not JSON, an unpaired surrogate): the 400 names its line.
        "operations": [{"include-path": "/v1/indexes/{name}/documents", "include-method": "POST",
                        "checks": {"positive_data_acceptance": {
                            "expected-statuses": [*accepted, "400"]}}},
                       # A schema-valid webhook URL may point at an address webhooks may
                       # not reach (http://0, http://10.1): the 400 names url.
                       {"include-path": "/v1/webhooks", "include-method": "POST",
                        "checks": {"positive_data_acceptance": {
                            "expected-statuses": [*accepted, "400"]}}}]})
    return schemathesis.openapi.from_url(f"{api.url}/v1/openapi.json", config=config)


CASES = [(schemathesis.GenerationMode.POSITIVE, op) for op in OPERATIONS] + \
        [(schemathesis.GenerationMode.NEGATIVE, op) for op in OPERATIONS if op in WITH_INPUT]


@pytest.mark.parametrize(("mode", "operation"), CASES,
                         ids=[f"{mode.value}-{m} {p}" for mode, (m, p) in CASES])
def test_every_operation_answers_as_its_spec_says(fuzz_schema: Any,
                                                  mode: schemathesis.GenerationMode,
                                                  operation: tuple[str, str]) -> None:
    """Generated requests for this operation get answers the spec allows, never a 5xx."""
    found = fuzz_schema.find_operation_by_label(" ".join(operation))
    assert found is not None
    fixed_path = FIXED_PATH.get(operation) if mode.is_positive else None
    strategy = found.as_strategy(generation_mode=mode, query=FIXED_QUERY.get(operation),
                                 path_parameters=fixed_path)

    @hypothesis.given(case=strategy)
    @hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                         derandomize=True, phases=[Phase.explicit, Phase.generate],
                         suppress_health_check=list(HealthCheck))
    def run(case: schemathesis.Case) -> None:
        # A query parameter with an empty list of values is never sent, so the server
        # cannot refuse it (schemathesis would still count it as invalid input).
        hypothesis.assume(all(value != [] for value in (case.query or {}).values()))
        case.call_and_validate(headers=AUTH)

    run()
