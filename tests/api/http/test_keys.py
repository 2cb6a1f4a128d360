"""API keys: the HOPINDEX_API_KEYS syntax, JSON and TOML key files with sha256 and
scrypt hashes, scope checks, and errors that name the entry but never the key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from hopindex.api.access import Access
from hopindex.api.http.keys import (
    HashScheme,
    KeyRing,
    Pending,
    hash_key,
    key_file_entry,
    key_id,
    load_key_ring,
    load_keys_file,
    new_key,
    parse_env_keys,
)
from hopindex.core.errors import ConfigError

WRITER = "w" * 20
READER = "r" * 20


def test_env_syntax_access_and_indexes() -> None:
    """A bare key writes everywhere; ``:read`` restricts access; ``:write:a+b`` restricts
    indexes; empty entries (a trailing comma) are ignored."""
    ring = KeyRing(parse_env_keys(f"{WRITER}, {READER}:read ,{'s' * 20}:write:a+b,"))
    writer, reader, scoped = (ring.lookup(k) for k in (WRITER, READER, "s" * 20))
    assert writer is not None and writer.access is Access.WRITE and writer.indexes is None
    assert reader is not None and reader.access is Access.READ and reader.covers("any")
    assert scoped is not None and scoped.indexes == {"a", "b"} and not scoped.covers("c")
    assert [p.name for p in (writer, reader, scoped)] == ["env-1", "env-2", "env-3"]
    assert ring.lookup("w" * 19) is None and ring.lookup("") is None


def test_write_includes_read() -> None:
    assert Access.WRITE.allows(Access.READ) and Access.WRITE.allows(Access.WRITE)
    assert Access.READ.allows(Access.READ) and not Access.READ.allows(Access.WRITE)


@pytest.mark.parametrize(("text", "expected"), [
    ("short", "entry 1: a key is 16 to 512"),
    (f"{WRITER}:admin", "entry 1: access must be 'read' or 'write'"),
    (f"{WRITER}:read:Bad_Index!", "entry 1: "),
    (f"{WRITER},{READER}:read:a:b", "entry 2: expected KEY[:read|write"),
])
def test_env_errors_name_the_entry_never_the_key(text: str, expected: str) -> None:
    """A malformed entry is a ConfigError naming its position; the key is not in it."""
    with pytest.raises(ConfigError) as caught:
        parse_env_keys(text)
    assert expected in str(caught.value)
    assert WRITER not in str(caught.value) and READER not in str(caught.value)


def test_toml_and_json_files_with_both_hashes(tmp_path: Path) -> None:
    """Keys files hold hashes, not keys; sha256 entries match at once, scrypt entries
    after the slow check, which is remembered for the next request."""
    fast, slow = new_key(), new_key()
    toml = tmp_path / "keys.toml"
    toml.write_text(f'[[keys]]\nname = "bot"\nhash = "{hash_key(fast)}"\naccess = "read"\n'
                    f'indexes = ["wiki"]\n\n[[keys]]\nname = "admin"\n'
                    f'hash = "{hash_key(slow, HashScheme.SCRYPT)}"\n')
    assert fast not in toml.read_text() and slow not in toml.read_text()
    ring = KeyRing(load_keys_file(toml))
    bot = ring.lookup(fast)
    assert bot is not None and not isinstance(bot, Pending)
    assert (bot.name, bot.access, bot.indexes) == ("bot", Access.READ, frozenset({"wiki"}))
    assert ring.lookup(slow) is Pending.SLOW_CHECK
    admin = ring.verify_slow(slow)
    assert admin is not None and admin.name == "admin" and admin.access is Access.WRITE
    assert ring.lookup(slow) == admin  # remembered
    assert ring.lookup(new_key()) is Pending.SLOW_CHECK
    assert ring.verify_slow("not-a-key-at-all-really") is None

    as_json = tmp_path / "keys.json"
    as_json.write_text(json.dumps({"keys": [{"name": "j", "hash": hash_key(fast)}]}))
    assert load_key_ring("", str(as_json)).lookup(fast) is not None


@pytest.mark.parametrize(("content", "expected"), [
    ("{}", "expected a top-level 'keys' list"),
    ('{"keys": [{"hash": "sha256:00"}]}', "'name' must be a non-empty string"),
    ('{"keys": [{"name": "a", "hash": "md5:00"}]}', "hash must start with sha256: or scrypt:"),
    ('{"keys": [{"name": "a", "hash": "sha256:abc"}]}', "malformed sha256 hash"),
    ('{"keys": [{"name": "a", "hash": "sha256:' + "0" * 64 + '", "indexes": "wiki"}]}',
     "'indexes' must be a list"),
    ('{"keys": [{"name": "a", "hash": "sha256:' + "0" * 64 + '"}, '
     '{"name": "a", "hash": "sha256:' + "1" * 64 + '"}]}', "duplicate key names ['a']"),
    ("{not json", "not valid JSON"),
])
def test_file_errors_name_the_file_and_entry(tmp_path: Path, content: str,
                                             expected: str) -> None:
    path = tmp_path / "keys.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match="HOPINDEX_API_KEYS_FILE") as caught:
        load_keys_file(path)
    assert expected in str(caught.value)


def test_missing_file_and_no_keys(tmp_path: Path) -> None:
    """A keys file that cannot be read is a ConfigError; no keys at all is a ring that is
    not configured (the server then serves loopback only)."""
    with pytest.raises(ConfigError, match="cannot read"):
        load_key_ring("", str(tmp_path / "absent.toml"))
    assert not load_key_ring("", "").configured


def test_api_key_command_prints_a_key_and_its_file_entry(tmp_path: Path) -> None:
    """``hopindex api-key`` prints a new key and a TOML entry that, saved as a keys file,
    lets exactly that key in with the access and indexes asked for."""
    from click.testing import CliRunner

    from hopindex.api.cli import main
    from hopindex.api.exit_codes import ExitCode

    result = CliRunner().invoke(main, ["api-key", "--access", "read", "--index", "wiki",
                                       "--name", "reporting"])
    assert result.exit_code == 0, result.output
    key_line, entry = result.output.split("\n\n", 1)
    key = key_line.removeprefix("key: ")
    path = tmp_path / "keys.toml"
    path.write_text(entry)
    found = KeyRing(load_keys_file(path)).lookup(key)
    assert found is not None and not isinstance(found, Pending)
    assert (found.name, found.access, found.indexes) == ("reporting", Access.READ,
                                                         frozenset({"wiki"}))
    bad = CliRunner().invoke(main, ["api-key", "--index", "Not Valid"])
    assert bad.exit_code == ExitCode.DATA_ERROR and "invalid index name" in bad.output


def scrypt_entry(name: str, key: str, *, with_id: bool = True) -> dict[str, str]:
    entry = {"name": name, "hash": hash_key(key, HashScheme.SCRYPT)}
    if with_id:
        entry["id"] = key_id(key)
    return entry


def test_a_key_naming_no_scrypt_entry_costs_no_scrypt_check(tmp_path: Path) -> None:
    """With scrypt entries that have ids, a wrong key is refused by lookup alone (no
    slow check); a key naming an entry gets its one slow check, then is remembered,
    and a wrong secret under a known id is refused and remembered as refused."""
    key = new_key()
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": [scrypt_entry("admin", key)]}))
    ring = KeyRing(load_keys_file(path))
    assert ring.entries_without_id == []
    for wrong in (new_key(), "x" * 40, "hpx_" + "0" * 12 + "_guess-guess-guess"):
        assert ring.lookup(wrong) is None
    assert ring.lookup(key) is Pending.SLOW_CHECK
    admin = ring.verify_slow(key)
    assert admin is not None and admin.name == "admin"
    assert ring.lookup(key) == admin
    forged = f"hpx_{key_id(key)}_{'z' * 43}"
    assert ring.lookup(forged) is Pending.SLOW_CHECK
    assert ring.verify_slow(forged) is None
    assert ring.lookup(forged) is None  # remembered: the next try costs nothing


def cheap_scrypt_entry(name: str, key: str) -> dict[str, str]:
    """A scrypt entry at the lowest cost the format allows, for tests that check many keys."""
    salt = b"0123456789abcdef"
    digest = hashlib.scrypt(key.encode(), salt=salt, n=2, r=1, p=1, dklen=32)
    return {"name": name, "id": key_id(key), "hash": f"scrypt:2:1:1:{salt.hex()}:{digest.hex()}"}


def test_wrong_keys_cannot_evict_a_verified_one(tmp_path: Path) -> None:
    """Keys that failed a slow check are remembered apart from those that passed, so a
    flood of wrong keys under a known id leaves the right key's memo in place."""
    key = new_key()
    ring = KeyRing(load_keys_file(_write(tmp_path, [cheap_scrypt_entry("a", key)])))
    assert ring.verify_slow(key) is not None
    for n in range(1100):
        ring.verify_slow(f"hpx_{key_id(key)}_{n:043d}")
    found = ring.lookup(key)
    assert found is not None and not isinstance(found, Pending) and found.name == "a"


def test_entries_without_id_still_work_and_are_reported(tmp_path: Path) -> None:
    """An old scrypt entry (no id) still accepts its key; any key no other entry takes
    is a slow check against it, and the ring names such entries (the server warns)."""
    old_key, new = "an-old-style-key-0123456789", new_key()
    ring = KeyRing(load_keys_file(_write(tmp_path, [
        scrypt_entry("old", old_key, with_id=False), scrypt_entry("new", new)])))
    assert ring.entries_without_id == ["old"]
    assert ring.lookup(new_key()) is Pending.SLOW_CHECK
    found = ring.verify_slow(old_key)
    assert found is not None and found.name == "old"
    found = ring.verify_slow(new)
    assert found is not None and found.name == "new"


@pytest.mark.parametrize(("entries", "expected"), [
    ([{"name": "a", "id": "XYZ", "hash": "sha256:" + "0" * 64}], "'id' must be 12 hex digits"),
    ([{"name": "a", "id": 7, "hash": "sha256:" + "0" * 64}], "'id' must be 12 hex digits"),
    ([{"name": "a", "id": "0123456789ab", "hash": "sha256:" + "0" * 64},
      {"name": "b", "id": "0123456789ab", "hash": "sha256:" + "1" * 64}],
     "duplicate key ids ['0123456789ab']"),
    ([{"name": "a", "hash": "scrypt:3:8:1:00:00"}], "N must be a power of 2"),
    ([{"name": "a", "hash": "scrypt:1048576:64:1:00:00"}], "needs over 268,435,456 bytes"),
])
def test_bad_ids_and_costs_name_the_entry(tmp_path: Path, entries: list[dict[str, object]],
                                          expected: str) -> None:
    """An id that is not 12 hex digits, a repeated id, or a scrypt cost that scrypt would
    refuse (or that needs too much memory per check) stops the start, naming the entry."""
    with pytest.raises(ConfigError, match="HOPINDEX_API_KEYS_FILE") as caught:
        load_keys_file(_write(tmp_path, entries))
    assert expected in str(caught.value)


def test_new_keys_carry_the_id_their_entry_holds(tmp_path: Path) -> None:
    """``new_key`` is hpx_<ID>_<SECRET>; ``key_file_entry`` writes that id, and the entry
    loads into a ring that accepts the key and refuses the same secret under another id."""
    key = new_key()
    assert key.startswith("hpx_") and len(key_id(key)) == 12 and key_id("hpx_nothex") == ""
    path = tmp_path / "keys.toml"
    path.write_text(key_file_entry(key, HashScheme.SCRYPT, name="svc", access="read",
                                   indexes=["wiki"]))
    assert f'id = "{key_id(key)}"' in path.read_text() and key not in path.read_text()
    ring = KeyRing(load_keys_file(path))
    assert ring.lookup(key) is Pending.SLOW_CHECK
    found = ring.verify_slow(key)
    assert found is not None and (found.name, found.indexes) == ("svc", frozenset({"wiki"}))
    other_id = "f" * 12 if key_id(key) != "f" * 12 else "e" * 12
    assert ring.lookup(key.replace(key_id(key), other_id)) is None


def _write(tmp_path: Path, entries: list[dict[str, object]] | list[dict[str, str]]) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": entries}))
    return path
