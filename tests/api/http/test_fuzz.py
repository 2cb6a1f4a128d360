"""A bounded schemathesis run against a real server, in schemathesis's own phases:
the spec's examples, coverage (boundary values and every kind of invalid input for
each parameter and body field, which is what finds a validation the spec does not
state) and fuzzing (generated requests, valid and invalid), for every operation.

Every check runs: no 5xx, the status code, content type, headers and body as the
spec says, schema-invalid requests refused (``negative_data_rejection``, ST201) and
schema-valid ones accepted (``positive_data_acceptance``, ST202). What counts as
accepting or refusing is set below, each with its reason: a valid request may still
be a 422 when it needs an LLM this server has none of (the spec documents it), a
valid upload may hold documents the readers refuse (a 400 naming the line), and a
body over a count or size limit is refused with 413. The event stream is fuzzed in
its ``backlog`` mode, since a following stream never ends.
"""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase

from tests.api.http.conftest import KEYS, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

# Generated requests per operation and mode in the fuzzing phase; the coverage phase
# adds its own, a number the spec decides (about 900 in all).
MAX_EXAMPLES = 10
AUTH = {"Authorization": f"Bearer {KEYS['write']}"}
# Valid queries go to an index that exists, so they run the real query path.
FUZZ_INDEX = "fuzz"
QUERY = ("POST", "/v1/indexes/{name}/query")
ACCEPTED = ["2xx", "401", "403", "404", "409", "422", "429"]
# The default refusals, and 413: a body over a count or size limit (maxItems,
# HOPINDEX_API_MAX_DOCUMENTS) is refused as the spec says, with 413, not 400.
REFUSED = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]


@pytest.fixture(scope="module")
def fuzz_schema(make_api: ApiFactory) -> Any:
    # Its auth probes send hundreds of requests without a valid key from one address.
    api = make_api(api_auth_failures_per_minute=0)
    _, docs = sample_documents(limit=3, question=2)
    job = api.call("POST", f"/v1/indexes/{FUZZ_INDEX}/documents", json=docs).json()
    assert api.wait_job(job["job_id"])["state"] == "succeeded"
    config = schemathesis.Config.from_dict({
        "headers": AUTH,
        "phases": {"stateful": {"enabled": False}},
        "generation": {"max-examples": MAX_EXAMPLES},
        "checks": {"positive_data_acceptance": {"expected-statuses": ACCEPTED},
                   "negative_data_rejection": {"expected-statuses": REFUSED}},
        "operations": [
            # A schema-valid upload can still hold invalid documents (a file type no reader
            # takes, a line that is not JSON, an empty file): the 400 names its line.
            {"include-path": "/v1/indexes/{name}/documents", "include-method": "POST",
             "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}}},
            # A schema-valid webhook URL may point at an address webhooks may not reach
            # (http://0, http://10.1): the 400 names url.
            {"include-path": "/v1/webhooks", "include-method": "POST",
             "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}}},
            {"include-path": "/v1/events", "include-method": "GET",
             "parameters": {"query.mode": "backlog"}},
        ]})
    return schemathesis.openapi.from_url(f"{api.url}/v1/openapi.json", config=config)


schema = schemathesis.pytest.from_fixture("fuzz_schema")


@schema.parametrize()
@hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
                     phases=[Phase.explicit, Phase.generate],
                     suppress_health_check=list(HealthCheck))
def test_every_operation_answers_as_its_spec_says(case: schemathesis.Case) -> None:
    """Examples, coverage and generated requests for each operation get answers the
    spec allows, are refused when invalid and accepted when valid; never a 5xx."""
    # A query parameter with an empty list of values is never sent, so the server
    # cannot refuse it (schemathesis would still count it as invalid input).
    if any(value == [] for value in (case.query or {}).values()):
        return
    if (case.method, case.path) == QUERY and case.meta is not None \
            and case.meta.generation.mode.is_positive:
        case.path_parameters = {**(case.path_parameters or {}), "name": FUZZ_INDEX}
    case.call_and_validate(headers=AUTH)
