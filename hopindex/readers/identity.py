"""Which input records are the same document: one rule for files and for records a
program hands over.

A record with an id is that id. A record without one is identified by its title
(``doc_id_from_title``). Several records under one title with different texts (an
article split into paragraphs, as MuSiQue's and many Wikipedia dumps are) are each a
document: the first under the title's id, the n-th text under that id with ``#n``, so
reading the same input again gives every record the same id. A repeated id, or a
title repeated with the same text, is a duplicate: the first record is kept.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from hopindex.core.ids import doc_id_from_title
from hopindex.readers.base import RawDocument


def _text_digest(text: str) -> bytes:
    # 16 bytes a text: the reader remembers one per record of a streamed million.
    return hashlib.blake2b(" ".join(text.split()).encode("utf-8"), digest_size=16).digest()


@dataclass(slots=True)
class Admitted:
    """A record as it goes on (its id set when it is a further text of a title), or
    why it was refused."""

    record: RawDocument
    duplicate: str = ""  # the reason, naming the first record's origin; "" when admitted


@dataclass(slots=True)
class RecordIdentities:
    """The ids of one input's records so far, in input order."""

    _first_seen: dict[str, str] = field(default_factory=dict)  # id -> origin
    _texts: dict[str, dict[bytes, str]] = field(default_factory=dict)  # title id -> texts

    def admit(self, record: RawDocument) -> Admitted:
        doc_id = (record.doc_id or "").strip()
        title = " ".join(record.title.split())
        if not doc_id and title:
            title_id = doc_id_from_title(title)
            texts = self._texts.setdefault(title_id, {})
            digest = _text_digest(record.text)
            earlier = texts.get(digest)
            if earlier is not None:
                return Admitted(record, f"duplicate record: title {record.title!r} with the "
                                        f"same text was first seen at {earlier}; kept that one")
            texts[digest] = record.origin
            doc_id = title_id if len(texts) == 1 else f"{title_id}#{len(texts)}"
            if len(texts) > 1:
                record = replace(record, doc_id=doc_id)
        if not doc_id:
            return Admitted(record)  # nothing identifies it: validation says so
        earlier = self._first_seen.get(doc_id)
        if earlier is not None:
            return Admitted(record, f"duplicate id {doc_id!r}: first seen at {earlier}; "
                                    "kept that one")
        self._first_seen[doc_id] = record.origin
        return Admitted(record)
