"""``redact_url``: userinfo and secret-looking query values never reach a reader, and
everything else of the URL stays as it was."""

from __future__ import annotations

import pytest

from hopindex.core.redact import is_secret_name, redact_url

CASES = [
    # userinfo, with and without a password, with an "@" inside the password
    ("https://bob:hunter2@example.org/hook", "https://***@example.org/hook"),
    ("https://TOKEN123@example.org/hook", "https://***@example.org/hook"),
    ("http://a:b@c@example.org:8080/x", "http://***@example.org:8080/x"),
    ("redis://:pw@redis:6379/0", "redis://***@redis:6379/0"),
    # secret-looking parameters, whatever their case or separator
    ("https://h/x?token=abc&page=2", "https://h/x?token=***&page=2"),
    ("https://h/x?access_token=a&api_key=b&apiKey=c&APIKEY=d",
     "https://h/x?access_token=***&api_key=***&apiKey=***&APIKEY=***"),
    ("https://s3/x?X-Amz-Credential=a&X-Amz-Signature=b&X-Amz-Date=c",
     "https://s3/x?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Date=c"),
    ("https://h/x?sv=1&sig=abc;password=p&auth=q&client_secret=r&code=s",
     "https://h/x?sv=1&sig=***;password=***&auth=***&client_secret=***&code=***"),
    ("https://h/x?secret=&key=k", "https://h/x?secret=***&key=***"),
    # names that merely contain a secret word's letters are kept
    ("https://h/x?keyword=rust&design=flat&monkey=1&sigma=2",
     "https://h/x?keyword=rust&design=flat&monkey=1&sigma=2"),
    # parameters in the fragment, both together, IPv6 hosts, relative references
    ("https://h/cb#access_token=zz&state=1", "https://h/cb#access_token=***&state=1"),
    ("http://u:p@[::1]:9/x?token=t#frag", "http://***@[::1]:9/x?token=***#frag"),
    ("/v1/hook?token=a&x=1", "/v1/hook?token=***&x=1"),
    # nothing to redact: unchanged, encoding kept byte for byte
    ("https://example.org/a%20b?q=caf%C3%A9&page=2", "https://example.org/a%20b?q=caf%C3%A9&page=2"),
    ("https://example.org", "https://example.org"),
    ("", ""),
    # URLs urlsplit refuses are redacted by pattern, never raised on
    ("http://[::1/?token=a", "http://[::1/?token=***"),
    ("http://user:pa#ss@host/x", "http://***@host/x"),
    ("http://user:pa/ss@host:notaport/", "http://***@host:notaport/"),
    ("user:pass@host/x?token=t", "***@host/x?token=***"),
]


@pytest.mark.parametrize(("url", "expected"), CASES, ids=[c[0] or "empty" for c in CASES])
def test_redact_url(url: str, expected: str) -> None:
    """Userinfo becomes ``***@``, secret-looking parameter values ``***``; the rest is
    kept exactly."""
    assert redact_url(url) == expected


@pytest.mark.parametrize("url", [c[0] for c in CASES])
def test_redacting_twice_changes_nothing_more(url: str) -> None:
    """A redacted URL passed through again (a log of an error message) stays as it is."""
    once = redact_url(url)
    assert redact_url(once) == once


def test_no_planted_secret_survives() -> None:
    """Every secret planted in a URL's userinfo and secret parameters is gone from the
    result, while the host, path and ordinary parameters are all still there."""
    planted = ["Pl4ntedUser", "Pl4ntedPass", "Pl4ntedToken", "Pl4ntedSig", "Pl4ntedKey"]
    url = (f"https://{planted[0]}:{planted[1]}@hooks.example.org:8443/in/bound?"
           f"token={planted[2]}&sig={planted[3]}&private_key={planted[4]}&team=blue")
    shown = redact_url(url)
    assert not [p for p in planted if p in shown]
    assert shown == ("https://***@hooks.example.org:8443/in/bound?token=***&sig=***"
                     "&private_key=***&team=blue")


@pytest.mark.parametrize(("name", "secret"), [
    ("token", True), ("Refresh-Token", True), ("x_api_key", True), ("privateKey", True),
    ("passphrase", True), ("session_id", True), ("jwt", True), ("tok%65n", True),
    ("page", False), ("keyword", False), ("tokens_used", False), ("q", False),
])
def test_secret_names_are_words_not_substrings(name: str, secret: bool) -> None:
    """A parameter is secret when a word of its name (split at separators and
    camelCase, percent-decoded) is a secret word."""
    assert is_secret_name(name) is secret
