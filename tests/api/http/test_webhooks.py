"""``/v1/webhooks`` over a real server: internal targets refused naming ``url``, fields
of the wrong type (null included) refused naming the field, and no reader ever sees a
URL's credentials or a secret-looking query value."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.http.conftest import Api

INDEX = "hooked"
PLANTED = ("Pl4ntedUser", "Pl4ntedPass", "Pl4ntedToken", "Pl4ntedSig")
SECRET_URL = (f"https://{PLANTED[0]}:{PLANTED[1]}@hooks.example.org/in?token={PLANTED[2]}"
              f"&sig={PLANTED[3]}&team=blue")
SHOWN_URL = "https://***@hooks.example.org/in?token=***&sig=***&team=blue"


def add(api: Api, key: str = "write", **body: Any) -> Any:
    return api.call("POST", "/v1/webhooks", key=key, json={"index": INDEX, **body})


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/", "http://localhost:6379/", "http://[::1]:22/",
    "http://10.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/",
    "http://[::ffff:127.0.0.1]/", "http://[fd00:ec2::254]/", "http://0/",
])
def test_internal_targets_are_a_400_naming_url(api: Api, url: str) -> None:
    """Each internal target of the security review is refused with a 400 naming url."""
    answer = add(api, url=url)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["field"] == "url"
    assert "public addresses" in answer.json()["error"]["message"]


@pytest.mark.parametrize(("body", "field"), [
    ({"url": "https://example.org/h", "secret": None}, "secret"),
    ({"url": "https://example.org/h", "secret": 12345}, "secret"),
    ({"url": "https://example.org/h", "secret": ["a"]}, "secret"),
    ({"url": "https://example.org/h", "secret": "whsec_tooshort"}, "secret"),
    ({"url": "https://example.org/h", "secret": "  "}, "secret"),
    ({"url": None}, "url"),
    ({"url": 42}, "url"),
    ({"url": {"href": "https://example.org/h"}}, "url"),
    ({"url": "https://example.org/h", "index": None}, "index"),
    ({"url": "https://example.org/h", "index": 7}, "index"),
])
def test_fields_of_the_wrong_type_are_a_400_naming_them(api: Api, body: dict[str, Any],
                                                        field: str) -> None:
    """null, numbers, lists and objects where the spec says string (and a secret that
    is no valid key) are refused, naming the field; nothing is registered."""
    before = api.call("GET", "/v1/webhooks").json()["webhooks"]
    answer = api.call("POST", "/v1/webhooks", json={"index": INDEX, **body})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["field"] == field
    assert api.call("GET", "/v1/webhooks").json()["webhooks"] == before


def test_a_client_cannot_record_private_targets_as_allowed(api: Api) -> None:
    """Whether a webhook may reach internal addresses is the server's decision, recorded
    with it: a body asking for it is refused naming the field, and a webhook registered
    with a server that does not allow private targets is recorded as public."""
    asked = add(api, url="http://127.0.0.1:9/in", allow_private=True)
    assert asked.status_code == 400, asked.text
    assert asked.json()["error"]["field"] == "allow_private"
    created = add(api, url="https://hooks.example.org/in")
    assert created.status_code == 201 and created.json()["allow_private"] is False
    assert api.call("DELETE", f"/v1/webhooks/{created.json()['id']}").status_code == 204


def test_readers_never_see_credentials_in_webhook_urls(api: Api) -> None:
    """A URL registered with userinfo and a token is shown redacted in the 201 and in
    every listing (write key, read key, filtered or not); the planted secrets appear
    nowhere in those answers, and the signing secret only in the 201, in whsec_ form."""
    created = add(api, url=SECRET_URL)
    assert created.status_code == 201, created.text
    hook = created.json()
    assert hook["url"] == SHOWN_URL and hook["secret"].startswith("whsec_")
    answers = [api.call("GET", "/v1/webhooks", key=key, params=params)
               for key in ("write", "read") for params in ({}, {"index": INDEX})]
    for answer in (created, *answers):
        assert answer.status_code in (200, 201)
        assert not [p for p in PLANTED if p in answer.text]
    for answer in answers:
        listed = [h for h in answer.json()["webhooks"] if h["id"] == hook["id"]]
        assert listed == [{"id": hook["id"], "index": INDEX, "url": SHOWN_URL,
                           "created_at": hook["created_at"], "allow_private": False}]
        assert hook["secret"] not in answer.text
    assert api.call("DELETE", f"/v1/webhooks/{hook['id']}").status_code == 204


def test_a_given_secret_comes_back_in_whsec_form(api: Api) -> None:
    """A free-text secret is kept as its bytes and answered as whsec_ + base64 of them;
    a whsec_ secret comes back as given."""
    import base64

    text = add(api, url="https://example.org/h", secret="my-old-receiver-secret")
    assert text.status_code == 201
    assert text.json()["secret"] == "whsec_" + base64.b64encode(b"my-old-receiver-secret").decode()
    given = "whsec_" + base64.b64encode(b"k" * 32).decode()
    same = add(api, url="https://example.org/h", secret=given)
    assert same.status_code == 201 and same.json()["secret"] == given
    for answer in (text, same):
        assert api.call("DELETE", f"/v1/webhooks/{answer.json()['id']}").status_code == 204
