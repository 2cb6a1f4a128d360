"""API keys: where they come from, how they are stored, and how a presented key is checked.

Two sources, both read once at start:

- ``HOPINDEX_API_KEYS``: comma-separated entries ``KEY[:ACCESS[:INDEXES]]``; ACCESS
  is ``read`` or ``write`` (default ``write``, which includes read), INDEXES is
  ``*`` (default) or index names joined by ``+``. Keys are hashed as soon as they
  are parsed; the plain text is not kept.
- ``HOPINDEX_API_KEYS_FILE``: JSON ``{"keys": [...]}`` or TOML ``[[keys]]`` with
  ``name``, ``hash`` (``sha256:HEX`` or ``scrypt:N:R:P:SALT_HEX:HASH_HEX``),
  ``access`` and ``indexes`` (a list, or ``["*"]``). ``hopindex api-key`` prints an
  entry for a new random key.

A presented key is hashed and compared with every stored hash in constant time
(``hmac.compare_digest``); keys are never logged, only their entry's name.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import secrets
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.ids import validate_index_name

ALL_INDEXES = "*"
# Random keys are long; a short one is a password someone typed, easy to guess.
MIN_KEY_CHARS = 16
# Longer headers are refused before hashing, so a request cannot buy hashing work.
MAX_KEY_CHARS = 512
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
# Keys already checked against scrypt entries (right or wrong), so a client's
# repeated requests cost one scrypt computation, not one each.
_SCRYPT_CACHE_SIZE = 1024


class Access(enum.StrEnum):
    READ = "read"  # queries, jobs, events, index descriptions
    WRITE = "write"  # everything READ allows, plus ingest, delete, cancel, webhooks

    def allows(self, needed: Access) -> bool:
        return self is Access.WRITE or needed is Access.READ


class Pending(enum.Enum):
    """A key that only the scrypt entries can judge: check it off the event loop."""

    SLOW_CHECK = "slow_check"


class HashScheme(enum.StrEnum):
    SHA256 = "sha256"
    SCRYPT = "scrypt"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: the key entry's name, its access and its indexes."""

    name: str
    access: Access
    indexes: frozenset[str] | None  # None: every index

    def covers(self, index: str) -> bool:
        return self.indexes is None or index in self.indexes

    @property
    def index_label(self) -> str:
        return ALL_INDEXES if self.indexes is None else "+".join(sorted(self.indexes))


# The principal of a server with no keys configured (it listens on loopback only).
LOCAL_PRINCIPAL = Principal(name="local", access=Access.WRITE, indexes=None)


@dataclass(frozen=True, slots=True)
class StoredKey:
    principal: Principal
    scheme: HashScheme
    digest: bytes
    salt: bytes = b""
    cost: tuple[int, int, int] = (SCRYPT_N, SCRYPT_R, SCRYPT_P)

    def matches(self, presented: bytes) -> bool:
        if self.scheme is HashScheme.SHA256:
            candidate = hashlib.sha256(presented).digest()
        else:
            n, r, p = self.cost
            candidate = hashlib.scrypt(presented, salt=self.salt, n=n, r=r, p=p,
                                       maxmem=256 * n * r * p, dklen=len(self.digest))
        return hmac.compare_digest(candidate, self.digest)


class KeyRing:
    """The configured keys; ``configured`` is False when there are none."""

    def __init__(self, keys: Sequence[StoredKey] = ()) -> None:
        self._fast = [k for k in keys if k.scheme is HashScheme.SHA256]
        self._slow = [k for k in keys if k.scheme is HashScheme.SCRYPT]
        self._checked: OrderedDict[bytes, Principal | None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        return bool(self._fast or self._slow)

    def lookup(self, presented: str) -> Principal | Pending | None:
        """The principal for a key, None for a wrong key, or ``Pending.SLOW_CHECK``
        when only scrypt entries can tell: run :meth:`verify_slow` off the event loop."""
        if not presented or len(presented) > MAX_KEY_CHARS:
            return None
        raw = presented.encode("utf-8", "surrogatepass")
        found: Principal | None = None
        for key in self._fast:  # no early exit: the time taken says nothing about position
            if key.matches(raw) and found is None:
                found = key.principal
        if found is not None or not self._slow:
            return found
        with self._lock:
            memo = hashlib.sha256(raw).digest()
            if memo in self._checked:
                self._checked.move_to_end(memo)
                return self._checked[memo]
        return Pending.SLOW_CHECK

    def verify_slow(self, presented: str) -> Principal | None:
        raw = presented.encode("utf-8", "surrogatepass")
        found: Principal | None = None
        for key in self._slow:
            if key.matches(raw) and found is None:
                found = key.principal
        with self._lock:
            self._checked[hashlib.sha256(raw).digest()] = found
            while len(self._checked) > _SCRYPT_CACHE_SIZE:
                self._checked.popitem(last=False)
        return found


def _parse_indexes(values: Sequence[str], where: str) -> frozenset[str] | None:
    if list(values) == [ALL_INDEXES]:
        return None
    if not values:
        raise ConfigError(f"{where}: name at least one index, or '*' for all")
    try:
        return frozenset(validate_index_name(v) for v in values)
    except InvalidInputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _parse_access(value: str, where: str) -> Access:
    try:
        return Access(value)
    except ValueError:
        raise ConfigError(f"{where}: access must be 'read' or 'write', got {value!r}") from None


def parse_env_keys(text: str) -> list[StoredKey]:
    """``HOPINDEX_API_KEYS``; errors name the entry by position, never the key."""
    keys: list[StoredKey] = []
    entries = [e.strip() for e in text.split(",")]
    for number, entry in enumerate(entries, start=1):
        if not entry:
            continue
        where = f"HOPINDEX_API_KEYS entry {number}"
        key, *rest = entry.split(":")
        if len(rest) > 2:
            raise ConfigError(f"{where}: expected KEY[:read|write[:INDEX+INDEX|*]]")
        if len(key) < MIN_KEY_CHARS or len(key) > MAX_KEY_CHARS:
            raise ConfigError(f"{where}: a key is {MIN_KEY_CHARS} to {MAX_KEY_CHARS} "
                              "characters (make one with `hopindex api-key`)")
        access = _parse_access(rest[0], where) if rest else Access.WRITE
        indexes = _parse_indexes(rest[1].split("+"), where) if len(rest) > 1 else None
        principal = Principal(name=f"env-{number}", access=access, indexes=indexes)
        keys.append(StoredKey(principal, HashScheme.SHA256,
                              hashlib.sha256(key.encode("utf-8")).digest()))
    return keys


def _parse_hash(value: object, where: str) -> tuple[HashScheme, bytes, bytes, tuple[int, int, int]]:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: 'hash' must be a string such as sha256:HEX")
    scheme, _, rest = value.partition(":")
    try:
        if scheme == HashScheme.SHA256:
            digest = bytes.fromhex(rest)
            if len(digest) != hashlib.sha256().digest_size:
                raise ValueError("a sha256 digest is 64 hex digits")
            return HashScheme.SHA256, digest, b"", (SCRYPT_N, SCRYPT_R, SCRYPT_P)
        if scheme == HashScheme.SCRYPT:
            n, r, p, salt, digest_hex = rest.split(":")
            return (HashScheme.SCRYPT, bytes.fromhex(digest_hex), bytes.fromhex(salt),
                    (int(n), int(r), int(p)))
    except ValueError as exc:
        raise ConfigError(f"{where}: malformed {scheme} hash ({exc})") from None
    raise ConfigError(f"{where}: hash must start with sha256: or scrypt:")


def _entry(record: object, where: str) -> StoredKey:
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: expected a table/object with name, hash, access, indexes")
    name = record.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: 'name' must be a non-empty string (it is what logs show)")
    access = _parse_access(str(record.get("access", Access.WRITE.value)), f"{where} ({name})")
    indexes = record.get("indexes", [ALL_INDEXES])
    if not isinstance(indexes, list) or not all(isinstance(i, str) for i in indexes):
        raise ConfigError(f"{where} ({name}): 'indexes' must be a list of index names or ['*']")
    scheme, digest, salt, cost = _parse_hash(record.get("hash"), f"{where} ({name})")
    principal = Principal(name=name, access=access,
                          indexes=_parse_indexes(indexes, f"{where} ({name})"))
    return StoredKey(principal, scheme, digest, salt, cost)


def load_keys_file(path: Path) -> list[StoredKey]:
    """A JSON or TOML keys file (by suffix); every problem names the file and entry."""
    where = f"HOPINDEX_API_KEYS_FILE {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not valid {path.suffix.lstrip('.').upper() or 'JSON'}: "
                          f"{exc}") from None
    records = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise ConfigError(f"{where}: expected a top-level 'keys' list")
    keys = [_entry(record, f"{where} keys[{i}]") for i, record in enumerate(records)]
    names = [k.principal.name for k in keys]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{where}: duplicate key names {duplicates}")
    return keys


def load_key_ring(api_keys: str, api_keys_file: str) -> KeyRing:
    keys = parse_env_keys(api_keys)
    if api_keys_file:
        keys.extend(load_keys_file(Path(api_keys_file)))
    return KeyRing(keys)


def new_key() -> str:
    return "hpx_" + secrets.token_urlsafe(32)


def hash_key(key: str, scheme: HashScheme = HashScheme.SHA256) -> str:
    """The ``hash`` value of a keys-file entry for ``key``."""
    raw = key.encode("utf-8")
    if scheme is HashScheme.SHA256:
        return f"sha256:{hashlib.sha256(raw).hexdigest()}"
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(raw, salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P,
                            maxmem=256 * SCRYPT_N * SCRYPT_R * SCRYPT_P, dklen=32)
    return f"scrypt:{SCRYPT_N}:{SCRYPT_R}:{SCRYPT_P}:{salt.hex()}:{digest.hex()}"
