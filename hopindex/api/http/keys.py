"""API keys: where they come from, how they are stored, and how a presented key is checked.

Two sources, both read once at start:

- ``HOPINDEX_API_KEYS``: comma-separated entries ``KEY[:ACCESS[:INDEXES]]``; ACCESS
  is ``read`` or ``write`` (default ``write``, which includes read), INDEXES is
  ``*`` (default) or index names joined by ``+``. Keys are hashed as soon as they
  are parsed; the plain text is not kept.
- ``HOPINDEX_API_KEYS_FILE``: JSON ``{"keys": [...]}`` or TOML ``[[keys]]`` with
  ``name``, ``id``, ``hash`` (``sha256:HEX`` or ``scrypt:N:R:P:SALT_HEX:HASH_HEX``),
  ``access`` and ``indexes`` (a list, or ``["*"]``). ``hopindex api-key`` prints an
  entry for a new random key.

A presented key is hashed and compared with the stored hashes in constant time
(``hmac.compare_digest``); keys are never logged, only their entry's name.

What a wrong key costs: sha256 entries are checked at once. A scrypt entry costs one
scrypt computation (tens of milliseconds of CPU) per check, so it is checked only
for a key that names it: keys from ``hopindex api-key`` read ``hpx_<ID>_<SECRET>``,
and the entry holds the same ``id`` (public, like a user name; the secret is what
the hash protects). A key naming no entry is refused without any scrypt work.
Entries without an ``id`` (made before keys had one) are still checked against
every key no other entry accepts; the server warns about them at start. A key
that passed its scrypt check is remembered by a keyed hash (HMAC-SHA256 under a
secret of this process), so its next requests cost microseconds.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import re
import secrets
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopindex.api.access import ALL_INDEXES, Access, Principal
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.ids import validate_index_name

# Random keys are long; a short one is a password someone typed, easy to guess.
MIN_KEY_CHARS = 16
# Longer headers are refused before hashing, so a request cannot buy hashing work.
MAX_KEY_CHARS = 512
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
# 16 MiB at the default cost; a keys file asking much more per check is refused.
MAX_SCRYPT_MEMORY_BYTES = 256 * 1024 * 1024
KEY_PREFIX = "hpx_"
KEY_ID_HEX = 12
# ``hpx_<ID>_<SECRET>``: the ID names the keys-file entry that can accept the key.
_KEY_ID = re.compile(rf"{KEY_PREFIX}([0-9a-f]{{{KEY_ID_HEX}}})_")
_ENTRY_ID = re.compile(rf"[0-9a-f]{{{KEY_ID_HEX}}}")
# Keys that passed a scrypt check, and keys that failed one, remembered apart: wrong
# keys, however many, cannot push a right one out.
_VERIFIED_CACHE_SIZE = 1024
_REFUSED_CACHE_SIZE = 1024


class Pending(enum.Enum):
    """A key that only the scrypt entries can judge: check it off the event loop."""

    SLOW_CHECK = "slow_check"


class HashScheme(enum.StrEnum):
    SHA256 = "sha256"
    SCRYPT = "scrypt"


@dataclass(frozen=True, slots=True)
class StoredKey:
    principal: Principal
    scheme: HashScheme
    digest: bytes
    salt: bytes = b""
    cost: tuple[int, int, int] = (SCRYPT_N, SCRYPT_R, SCRYPT_P)
    key_id: str = ""  # the ID its keys carry; empty for entries made without one

    def matches(self, presented: bytes) -> bool:
        if self.scheme is HashScheme.SHA256:
            candidate = hashlib.sha256(presented).digest()
        else:
            n, r, p = self.cost
            candidate = hashlib.scrypt(presented, salt=self.salt, n=n, r=r, p=p,
                                       maxmem=scrypt_memory(n, r, p), dklen=len(self.digest))
        return hmac.compare_digest(candidate, self.digest)


def key_id(presented: str) -> str:
    """The entry ID a key carries (``hpx_<ID>_<SECRET>``), or '' for a key without one."""
    found = _KEY_ID.match(presented)
    return found.group(1) if found else ""


class KeyRing:
    """The configured keys; ``configured`` is False when there are none."""

    def __init__(self, keys: Sequence[StoredKey] = ()) -> None:
        self.entries = tuple(keys)
        self._fast = [k for k in keys if k.scheme is HashScheme.SHA256]
        slow = [k for k in keys if k.scheme is HashScheme.SCRYPT]
        self._slow_by_id = {k.key_id: k for k in slow if k.key_id}
        self._slow_without_id = [k for k in slow if not k.key_id]
        # Keys are remembered by HMAC under this process's secret, never as sent.
        self._secret = secrets.token_bytes(32)
        self._verified: OrderedDict[bytes, Principal] = OrderedDict()
        self._refused: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        return bool(self._fast or self._slow_by_id or self._slow_without_id)

    @property
    def entries_without_id(self) -> list[str]:
        """Names of scrypt entries that any wrong key costs a scrypt check."""
        return [k.principal.name for k in self._slow_without_id]

    def lookup(self, presented: str) -> Principal | Pending | None:
        """The principal for a key, None for a wrong key, or ``Pending.SLOW_CHECK``
        when a scrypt entry may accept it: run :meth:`verify_slow` off the event loop.
        Costs one sha256 per sha256 entry and one HMAC, never a scrypt."""
        if not presented or len(presented) > MAX_KEY_CHARS:
            return None
        raw = presented.encode("utf-8", "surrogatepass")
        found: Principal | None = None
        for key in self._fast:  # no early exit: the time taken says nothing about position
            if key.matches(raw) and found is None:
                found = key.principal
        if found is not None or not self._slow_candidates(presented):
            return found
        tag = self._tag(raw)
        with self._lock:
            if tag in self._verified:
                self._verified.move_to_end(tag)
                return self._verified[tag]
            if tag in self._refused:
                return None
        return Pending.SLOW_CHECK

    def verify_slow(self, presented: str) -> Principal | None:
        """Check a key against the scrypt entries that may accept it (one scrypt each)."""
        raw = presented.encode("utf-8", "surrogatepass")
        found: Principal | None = None
        for key in self._slow_candidates(presented):
            if key.matches(raw) and found is None:
                found = key.principal
        tag = self._tag(raw)
        with self._lock:
            if found is not None:
                self._verified[tag] = found
                _trim(self._verified, _VERIFIED_CACHE_SIZE)
            else:
                self._refused[tag] = None
                _trim(self._refused, _REFUSED_CACHE_SIZE)
        return found

    def _slow_candidates(self, presented: str) -> list[StoredKey]:
        named = self._slow_by_id.get(key_id(presented))
        return [named, *self._slow_without_id] if named else self._slow_without_id

    def _tag(self, raw: bytes) -> bytes:
        return hmac.new(self._secret, raw, hashlib.sha256).digest()


def _trim(cache: OrderedDict[bytes, Any], size: int) -> None:
    while len(cache) > size:
        cache.popitem(last=False)


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
            cost = int(n), int(r), int(p)
            _check_scrypt_cost(*cost)
            return HashScheme.SCRYPT, bytes.fromhex(digest_hex), bytes.fromhex(salt), cost
    except ValueError as exc:
        raise ConfigError(f"{where}: malformed {scheme} hash ({exc})") from None
    raise ConfigError(f"{where}: hash must start with sha256: or scrypt:")


def scrypt_memory(n: int, r: int, p: int) -> int:
    """The bytes scrypt needs at this cost (OpenSSL's own sum), with room to spare."""
    return 128 * r * (n + p + 2) + 64 * 1024


def _check_scrypt_cost(n: int, r: int, p: int) -> None:
    # Checked at start: a cost scrypt refuses would fail every request with its key.
    if n < 2 or n & (n - 1) or r < 1 or p < 1:
        raise ValueError("N must be a power of 2 above 1, R and P at least 1")
    if scrypt_memory(n, r, p) > MAX_SCRYPT_MEMORY_BYTES:
        raise ValueError(f"N={n}, R={r}, P={p} needs over {MAX_SCRYPT_MEMORY_BYTES:,} bytes "
                         "per check")


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
    entry_id = record.get("id", "")
    if not isinstance(entry_id, str) or (entry_id and not _ENTRY_ID.fullmatch(entry_id)):
        raise ConfigError(f"{where} ({name}): 'id' must be {KEY_ID_HEX} hex digits (the ID "
                          f"in the key, {KEY_PREFIX}<ID>_...), got {entry_id!r}")
    principal = Principal(name=name, access=access,
                          indexes=_parse_indexes(indexes, f"{where} ({name})"))
    return StoredKey(principal, scheme, digest, salt, cost, key_id=entry_id)


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
    for what, values in (("names", [k.principal.name for k in keys]),
                         ("ids", [k.key_id for k in keys if k.key_id])):
        duplicates = sorted({v for v in values if values.count(v) > 1})
        if duplicates:
            raise ConfigError(f"{where}: duplicate key {what} {duplicates}")
    return keys


def load_key_ring(api_keys: str, api_keys_file: str) -> KeyRing:
    keys = parse_env_keys(api_keys)
    if api_keys_file:
        keys.extend(load_keys_file(Path(api_keys_file)))
    return KeyRing(keys)


def new_key() -> str:
    """``hpx_<ID>_<SECRET>``: a random public ID naming its entry, and 256 random bits."""
    return f"{KEY_PREFIX}{secrets.token_hex(KEY_ID_HEX // 2)}_{secrets.token_urlsafe(32)}"


def hash_key(key: str, scheme: HashScheme = HashScheme.SHA256) -> str:
    """The ``hash`` value of a keys-file entry for ``key``."""
    raw = key.encode("utf-8")
    if scheme is HashScheme.SHA256:
        return f"sha256:{hashlib.sha256(raw).hexdigest()}"
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(raw, salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P,
                            maxmem=scrypt_memory(SCRYPT_N, SCRYPT_R, SCRYPT_P), dklen=32)
    return f"scrypt:{SCRYPT_N}:{SCRYPT_R}:{SCRYPT_P}:{salt.hex()}:{digest.hex()}"


def key_file_entry(key: str, scheme: HashScheme, *, name: str, access: str,
                   indexes: Sequence[str]) -> str:
    """The TOML ``[[keys]]`` entry for ``key`` (what ``hopindex api-key`` prints)."""
    entry_id = key_id(key)
    lines = ["[[keys]]", f"name = {json.dumps(name)}"]
    if entry_id:
        lines.append(f'id = "{entry_id}"')
    lines += [f'hash = "{hash_key(key, scheme)}"', f'access = "{access}"',
              f"indexes = {json.dumps(list(indexes) or [ALL_INDEXES])}"]
    return "\n".join(lines)
