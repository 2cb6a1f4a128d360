"""Event tokens on their own: a token acts as a read-only principal for its one index
until it expires; any change to it, a key that is gone or re-hashed, or a key that no
longer covers the index voids it; and any process with the same keys verifies it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.api.access import LOCAL_PRINCIPAL, Access, Principal
from hopindex.api.http.event_tokens import (
    EVENT_TOKEN_TTL_S,
    MAX_TOKEN_CHARS,
    EventTokens,
    Refusal,
)
from hopindex.api.http.keys import (
    HashScheme,
    KeyRing,
    key_file_entry,
    load_keys_file,
    new_key,
    parse_env_keys,
)

NOW = 1_800_000_000.0
WRITE_KEY = "write-key-0123456789abcdef"
SCOPED_KEY = "scoped-key-0123456789abcdef"
GENERATED_KEY = new_key()  # hpx_<ID>_<SECRET>, as `hopindex api-key` makes them
SPEC = f"{WRITE_KEY},{SCOPED_KEY}:read:tenant-a+tenant-b,{GENERATED_KEY}:read"


def ring(spec: str = SPEC) -> KeyRing:
    return KeyRing(parse_env_keys(spec))


def principal_of(keys: KeyRing, key: str) -> Principal:
    found = keys.lookup(key)
    assert isinstance(found, Principal)
    return found


def test_a_token_is_read_only_and_covers_its_index_only() -> None:
    """A write key's token acts as a read-only principal for the one index it names,
    under the key's name, until ``expires_at``."""
    keys = ring()
    tokens = EventTokens(keys)
    issued = tokens.issue(principal_of(keys, WRITE_KEY), "docs", now=NOW)
    assert issued.expires_at == int(NOW) + EVENT_TOKEN_TTL_S
    assert issued.as_dict() == {"token": issued.token, "index": "docs",
                                "expires_at": issued.expires_at}
    found = tokens.verify(issued.token, now=NOW + 1)
    assert found == Principal(name="env-1 (event token)", access=Access.READ,
                              indexes=frozenset({"docs"}))
    assert WRITE_KEY not in issued.token


def test_a_token_expires() -> None:
    """Valid up to the second before ``expires_at``, refused as expired from then on."""
    keys = ring()
    tokens = EventTokens(keys, ttl_s=60)
    issued = tokens.issue(principal_of(keys, WRITE_KEY), "docs", now=NOW)
    assert isinstance(tokens.verify(issued.token, now=issued.expires_at - 1), Principal)
    assert tokens.verify(issued.token, now=issued.expires_at) is Refusal.EXPIRED
    assert tokens.verify(issued.token, now=issued.expires_at + 3600) is Refusal.EXPIRED


def _tampered(token: str) -> list[str]:
    version, entry, index, expires, mac = token.split(".")
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
    return [
        ".".join((version, entry, "other-index", expires, mac)),  # another index
        ".".join((version, entry, index, str(int(expires) + 86_400), mac)),  # longer life
        ".".join((version, entry, index, expires, flipped)),
    ]


def test_a_changed_token_is_refused() -> None:
    """Another index, a later expiry or a changed MAC: the signature no longer holds.
    Cut, padded or otherwise malformed tokens are refused before any hashing."""
    keys = ring()
    tokens = EventTokens(keys)
    token = tokens.issue(principal_of(keys, WRITE_KEY), "docs", now=NOW).token
    for changed in _tampered(token):
        assert tokens.verify(changed, now=NOW) is Refusal.BAD_SIGNATURE, changed
    for malformed in (token[:-1], token + "A", token + "\n", " " + token, "",
                      token.replace("hpe1", "hpe2"), token + "x" * MAX_TOKEN_CHARS):
        assert tokens.verify(malformed, now=NOW) is Refusal.MALFORMED, malformed


# Ids by name: the generated key differs per process, and pytest-xdist's processes
# must collect the same test ids.
@pytest.mark.parametrize("key", [WRITE_KEY, SCOPED_KEY, GENERATED_KEY],
                         ids=["write", "scoped", "generated"])
def test_an_api_key_is_not_a_token(key: str) -> None:
    """The configured API keys, whatever they look like, are refused as tokens."""
    assert EventTokens(ring()).verify(key, now=NOW) is Refusal.MALFORMED


def test_any_process_with_the_same_keys_verifies_it() -> None:
    """A second EventTokens over the same configuration (another API process) accepts
    the token: nothing is shared but the keys."""
    first = ring()
    token = EventTokens(first).issue(principal_of(first, SCOPED_KEY), "tenant-a",
                                     now=NOW).token
    found = EventTokens(ring()).verify(token, now=NOW)
    assert isinstance(found, Principal) and found.indexes == frozenset({"tenant-a"})


def test_a_token_is_void_once_its_key_is_gone_or_no_longer_covers_the_index() -> None:
    """Removing the issuing key voids its tokens; narrowing the key's indexes voids the
    tokens for the indexes it no longer covers."""
    keys = ring()
    token = EventTokens(keys).issue(principal_of(keys, SCOPED_KEY), "tenant-b", now=NOW).token
    assert EventTokens(ring(WRITE_KEY)).verify(token, now=NOW) is Refusal.UNKNOWN_KEY
    narrowed = ring(f"{WRITE_KEY},{SCOPED_KEY}:read:tenant-a")
    assert EventTokens(narrowed).verify(token, now=NOW) is Refusal.NOT_COVERED


def test_each_key_signs_its_own_tokens() -> None:
    """Two keys' tokens for the same index differ, and each is checked under its key."""
    keys = ring()
    tokens = EventTokens(keys)
    mine = tokens.issue(principal_of(keys, WRITE_KEY), "tenant-a", now=NOW).token
    theirs = tokens.issue(principal_of(keys, SCOPED_KEY), "tenant-a", now=NOW).token
    assert mine.split(".")[1] != theirs.split(".")[1]
    spliced = ".".join((*mine.split(".")[:4], theirs.split(".")[4]))
    assert tokens.verify(spliced, now=NOW) is Refusal.BAD_SIGNATURE


def test_scrypt_entries_sign_too_and_rehashing_a_key_voids_its_tokens(tmp_path: Path) -> None:
    """A keys-file (scrypt) entry issues tokens other processes reading the same file
    accept; the same key hashed again (a new salt) is a new secret."""
    key = new_key()
    path = tmp_path / "keys.toml"

    def write_entry() -> KeyRing:
        path.write_text(key_file_entry(key, HashScheme.SCRYPT, name="page", access="read",
                                       indexes=["docs"]))
        return KeyRing(load_keys_file(path))

    keys = write_entry()
    who = keys.verify_slow(key)
    assert who is not None
    token = EventTokens(keys).issue(who, "docs", now=NOW).token
    assert isinstance(EventTokens(KeyRing(load_keys_file(path))).verify(token, now=NOW),
                      Principal)
    assert EventTokens(write_entry()).verify(token, now=NOW) is Refusal.UNKNOWN_KEY


def test_without_keys_tokens_are_this_process_own() -> None:
    """A server without keys (loopback only, every request allowed) still issues tokens
    its pages can pass; another process's are unknown to it."""
    tokens = EventTokens(KeyRing())
    token = tokens.issue(LOCAL_PRINCIPAL, "docs", now=NOW).token
    assert isinstance(tokens.verify(token, now=NOW), Principal)
    assert EventTokens(KeyRing()).verify(token, now=NOW) is Refusal.UNKNOWN_KEY
