"""Redacting secrets out of URLs before anyone but their owner sees them.

A URL a user registers or configures (a webhook, an LLM base URL, a broker) may
carry credentials: ``https://user:pass@host/``, ``?token=…``, ``?sig=…``. Every
place that shows such a URL to a reader (API listings, job errors, events, logs)
passes it through ``redact_url`` first.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus, urlsplit, urlunsplit

REDACTED = "***"

# Words that make a query parameter secret when the parameter's name contains one of
# them as a word: ``token``, ``access_token``, ``X-Amz-Signature``, ``apiKey``,
# ``client_secret``; but not ``keyword`` or ``design``. ``code`` is here because
# some providers (Azure Functions, OAuth) put a key or a grant in it.
SECRET_WORDS = frozenset({
    "token", "secret", "password", "passwd", "pwd", "pass", "passphrase", "signature",
    "sig", "key", "apikey", "auth", "authorization", "credential", "credentials",
    "session", "sessionid", "jwt", "bearer", "hmac", "otp", "code", "private",
})
# Splits a parameter name into words: at anything not a letter or digit, and between
# a lower-case letter or digit and an upper-case one (``apiKey`` -> ``api``, ``Key``).
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# A query or fragment's separators: ``&``, and ``;`` as older forms use.
_PARAM_SPLIT = re.compile(r"([&;])")
# For text urlsplit refuses (a broken IPv6 host, a port that is no number because a
# password holds a "#" or "/"): everything from ``//`` to the last "@" (more than the
# userinfo at worst), and any ``name=value`` after ``?``, ``#``, ``&`` or ``;``.
_LOOSE_USERINFO = re.compile(r"(?<=//)\S*@")
_LEADING_USERINFO = re.compile(r"^[^/?#\s]*@")
_LOOSE_PARAM = re.compile(r"(?<=[?#&;])([^=&;#\s]+)=([^&;#\s]*)")


def is_secret_name(name: str) -> bool:
    """True when a query parameter named ``name`` probably holds a secret."""
    words = {w.lower() for w in _WORD_BREAK.split(unquote_plus(name)) if w}
    return bool(words & SECRET_WORDS)


def _redact_params(text: str) -> str:
    """``a=1&token=x`` -> ``a=1&token=***``: other pairs kept byte for byte."""
    pieces = _PARAM_SPLIT.split(text)
    for i in range(0, len(pieces), 2):
        name, sep, _ = pieces[i].partition("=")
        if sep and is_secret_name(name):
            pieces[i] = f"{name}={REDACTED}"
    return "".join(pieces)


def _redact_loosely(text: str) -> str:
    text = _LOOSE_USERINFO.sub(REDACTED + "@", text)
    return _LOOSE_PARAM.sub(
        lambda m: f"{m.group(1)}={REDACTED}" if is_secret_name(m.group(1)) else m.group(0),
        text)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and the values of secret-looking query (and fragment)
    parameters replaced by ``***``; scheme, host, port, path and other parameters as
    they were. Never raises: text that does not parse as a URL is redacted by pattern.

    >>> redact_url("https://bob:hunter2@example.org/hook?token=abc&page=2")
    'https://***@example.org/hook?token=***&page=2'
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError on a malformed port, as a bad host does
    except ValueError:
        return _redact_loosely(url)
    netloc = parts.netloc
    if "@" in netloc:
        # The host follows the last "@": a password may hold an unencoded one.
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = _redact_params(parts.query)
    fragment = _redact_params(parts.fragment) if "=" in parts.fragment else parts.fragment
    redacted = urlunsplit((parts.scheme, netloc, parts.path, query, fragment))
    if not parts.netloc:
        # ``user:pass@host/x`` without ``//`` has no netloc to urlsplit: the part
        # before the first "@" (when no "/" comes first) is taken as userinfo.
        redacted = _LEADING_USERINFO.sub(REDACTED + "@", redacted)
    return redacted


# A URL inside free text (an error message, a log value): a scheme, "://", and
# everything up to white space or a closing quote or bracket.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{}]+")


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`: what job
    reasons, item errors, events, API error messages and log values go through."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def redact_values(value: object) -> object:
    """``value`` with :func:`redact_text` applied to every string in it, at any depth of
    lists, tuples and dicts (event data, a log event's values)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_values(v) for v in value)
    return value
