"""The default document limit against the default body limit on a real server: a
document as large as HOPINDEX_MAX_DOCUMENT_BYTES can be uploaded as JSON."""

from __future__ import annotations

import json

import pytest

from tests.api.http.conftest import Api

pytestmark = pytest.mark.integration


def test_a_document_at_the_default_limit_fits_the_default_body(api: Api) -> None:
    """With the default limits one document of HOPINDEX_MAX_DOCUMENT_BYTES (20 MB of
    UTF-8) is taken even as JSON with every character \\u-escaped (60 MB: three times
    its bytes, the most any character but a control character takes); a byte more is
    refused naming the document limit, not the body limit."""
    limit = api.service.settings.max_document_bytes
    assert limit == 20_000_000
    body = json.dumps([{"id": "book", "title": "Book", "text": "\u00e9" * (limit // 2)}])
    assert len(body) > 3 * limit
    path = "/v1/indexes/books/documents"
    planned = api.call("POST", path, params={"dry_run": "true"}, data=body,
                       headers={"Content-Type": "application/json"})
    assert planned.status_code == 200, planned.text[:500]
    assert planned.json()["documents"]["new"] == 1
    over = json.dumps([{"id": "book", "title": "Book", "text": "z" * (limit + 1)}])
    refused = api.call("POST", path, params={"dry_run": "true"}, data=over,
                       headers={"Content-Type": "application/json"})
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert "HOPINDEX_MAX_DOCUMENT_BYTES=20,000,000" in message
    assert "HOPINDEX_API_MAX_BODY_BYTES" not in message
