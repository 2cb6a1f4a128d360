"""Event tokens: short-lived, read-only credentials for one index's event stream.

A browser's ``EventSource`` cannot send an ``Authorization`` header, so a page asks
``POST /v1/indexes/{name}/events/token`` (with its key, from ``fetch``) and opens
``GET /v1/events?index=NAME&token=TOKEN``. Putting the API key itself in a URL would
leave it in proxy logs and browser history; a token there is worth one index's events
for a few minutes. No other route takes one.

A token reads ``hpe1.<ENTRY>.<INDEX>.<EXPIRES>.<MAC>``: ``MAC`` is HMAC-SHA256 over the
rest under a secret derived from the issuing key's stored hash, and ``ENTRY`` names
that key entry by a fingerprint of the secret (not by its name, which a URL would
show). So every API process with the same keys configured verifies every token with
no shared state; removing or changing a key voids its tokens; and a token never
covers more than its key does now. Reading the keys file is enough to make tokens,
as it is to see which keys exist: keep it as private as the keys.

Without keys (a loopback-only server where every request is allowed) tokens are
signed with a secret of this process; they are not needed there.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from hopindex.api.access import LOCAL_PRINCIPAL, Access, Principal
from hopindex.api.http.keys import KeyRing, StoredKey

TOKEN_PARAM = "token"
TOKEN_VERSION = "hpe1"
EVENT_TOKEN_TTL_S = 300
# Longer query values are refused before any parsing or hashing.
MAX_TOKEN_CHARS = 160
_LABEL = b"hopindex event token\x00"
_ENTRY_HEX = 16
# What the OpenAPI document publishes; the groups are what verify() reads.
TOKEN_PATTERN = (rf"^{TOKEN_VERSION}\.([0-9a-f]{{{_ENTRY_HEX}}})\.([a-z0-9][a-z0-9_-]{{0,62}})"
                 r"\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$")
_TOKEN = re.compile(TOKEN_PATTERN)


class Refusal(enum.StrEnum):
    """Why a presented token is not accepted (logged; the client learns only EXPIRED)."""

    MALFORMED = "malformed"
    UNKNOWN_KEY = "unknown_key"  # its key is no longer configured, or changed
    BAD_SIGNATURE = "bad_signature"
    EXPIRED = "expired"
    NOT_COVERED = "not_covered"  # its key no longer covers the index


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    index: str
    expires_at: int

    def as_dict(self) -> dict[str, Any]:
        return {"token": self.token, "index": self.index, "expires_at": self.expires_at}


@dataclass(frozen=True, slots=True)
class _Signer:
    principal: Principal
    secret: bytes
    entry: str

    @classmethod
    def derive(cls, principal: Principal, material: bytes) -> _Signer:
        secret = hmac.new(material, _LABEL, hashlib.sha256).digest()
        entry = hmac.new(secret, b"entry", hashlib.sha256).hexdigest()[:_ENTRY_HEX]
        return cls(principal, secret, entry)

    def mac(self, signed: str) -> str:
        digest = hmac.new(self.secret, signed.encode("ascii"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _material(key: StoredKey) -> bytes:
    # The stored hash is what every process has of the key; the scheme, salt and cost
    # go in too, so re-hashing the same key differently is a different secret.
    n, r, p = key.cost
    return b"\x00".join((key.scheme.value.encode(), key.salt, f"{n}:{r}:{p}".encode(),
                         key.digest))


class EventTokens:
    """Issues and checks event tokens for the keys of one :class:`KeyRing`."""

    def __init__(self, keys: KeyRing, ttl_s: int = EVENT_TOKEN_TTL_S) -> None:
        self.ttl_s = ttl_s
        signers = ([_Signer.derive(k.principal, _material(k)) for k in keys.entries]
                   if keys.configured
                   else [_Signer.derive(LOCAL_PRINCIPAL, secrets.token_bytes(32))])
        self._by_entry = {s.entry: s for s in signers}
        # Entries with equal principals are interchangeable here: the first one signs.
        self._by_principal: dict[Principal, _Signer] = {}
        for signer in signers:
            self._by_principal.setdefault(signer.principal, signer)

    def issue(self, who: Principal, index: str, *, now: float) -> IssuedToken:
        """A token for ``index``'s events, valid for ``ttl_s`` from ``now``. ``who``
        is the request's principal, already checked to cover ``index``."""
        signer = self._by_principal[who]
        expires_at = int(now) + self.ttl_s
        signed = f"{TOKEN_VERSION}.{signer.entry}.{index}.{expires_at}"
        return IssuedToken(f"{signed}.{signer.mac(signed)}", index, expires_at)

    def verify(self, token: str, *, now: float) -> Principal | Refusal:
        """The read-only principal the token acts as, covering only its index; or why
        it is refused."""
        found = _TOKEN.fullmatch(token) if len(token) <= MAX_TOKEN_CHARS else None
        if found is None:
            return Refusal.MALFORMED
        entry, index, expires, mac = found.groups()
        signer = self._by_entry.get(entry)
        if signer is None:
            return Refusal.UNKNOWN_KEY
        if not hmac.compare_digest(mac, signer.mac(token[:-len(mac) - 1])):
            return Refusal.BAD_SIGNATURE
        if now >= int(expires):
            return Refusal.EXPIRED
        if not signer.principal.covers(index):
            return Refusal.NOT_COVERED
        return Principal(name=f"{signer.principal.name} (event token)", access=Access.READ,
                         indexes=frozenset((index,)))
