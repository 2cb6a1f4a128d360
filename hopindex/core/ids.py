"""Deterministic identifiers: the same input always yields the same id, so writes are upserts."""

from __future__ import annotations

import hashlib
import re
import uuid

from hopindex.core.errors import InvalidIndexNameError

# uuid5 namespace for every hopindex id; changing it would orphan every stored unit.
_NAMESPACE = uuid.UUID("6f1c9d2e-4a8b-5c3d-9e7f-0a1b2c3d4e5f")

# One pattern everywhere: index names become Qdrant collections, Elasticsearch
# indexes and folder names, so they must be safe in all three.
INDEX_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def validate_index_name(name: str) -> str:
    """Return ``name`` if it is a safe index name, else raise naming the rule."""
    if not INDEX_NAME_PATTERN.fullmatch(name):
        raise InvalidIndexNameError(
            f"invalid index name {name!r}: use 1-63 characters of a-z, 0-9, '_' or '-', "
            "starting with a letter or digit",
            where="index",
        )
    return name


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(title: str, text: str) -> str:
    """Hash of a document's normalised title and text: equal hashes mean nothing to redo."""
    normalised = " ".join(title.split()) + "\n" + " ".join(text.split())
    return sha256_hex(normalised)


def doc_id_from_title(title: str) -> str:
    """A document without a user id is identified by its title."""
    return "t-" + sha256_hex(" ".join(title.split()))[:24]


def unit_id(index: str, kind: str, source_key: str, text: str) -> str:
    """uuid5 over index, kind, source key and text hash (docs/architecture.md)."""
    return str(uuid.uuid5(_NAMESPACE, f"{index}\x1f{kind}\x1f{source_key}\x1f{sha256_hex(text)}"))


def content_key(kind: str, source_key: str, text: str) -> str:
    """What ``unit_id`` hashes, without the index: equal across two indexes of one corpus,
    so rankings that break ties on it do not depend on the index's name."""
    return sha256_hex(f"{kind}\x1f{source_key}\x1f{text}")


def job_id() -> str:
    """Jobs are events in time, not content: a random id."""
    return uuid.uuid4().hex
