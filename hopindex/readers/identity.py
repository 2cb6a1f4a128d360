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
    """The ids of one input's records so far, in input order.

    Per record it keeps the id with the first origin, and for a title its first text's
    16-byte digest; the other texts of a title (rare) in a dict of their own. A
    million records stream through in a few hundred bytes each."""

    _first_seen: dict[str, str] = field(default_factory=dict)  # id -> origin
    _first_text: dict[str, bytes] = field(default_factory=dict)  # title id -> digest
    _more_texts: dict[str, dict[bytes, str]] = field(default_factory=dict)

    def admit(self, record: RawDocument) -> Admitted:
        doc_id = (record.doc_id or "").strip()
        title = " ".join(record.title.split())
        if not doc_id and title:
            title_id = doc_id_from_title(title)
            doc_id, same_text_at = self._title_id(title_id, record)
            if same_text_at:
                return Admitted(record, f"duplicate record: title {record.title!r} with the "
                                        f"same text was first seen at {same_text_at}; kept "
                                        "that one")
            if doc_id != title_id:
                record = replace(record, doc_id=doc_id)
        if not doc_id:
            return Admitted(record)  # nothing identifies it: validation says so
        earlier = self._first_seen.get(doc_id)
        if earlier is not None:
            return Admitted(record, f"duplicate id {doc_id!r}: first seen at {earlier}; "
                                    "kept that one")
        self._first_seen[doc_id] = record.origin
        return Admitted(record)

    def _title_id(self, title_id: str, record: RawDocument) -> tuple[str, str]:
        """The id of this text under the title, or the origin of the same text before."""
        digest = _text_digest(record.text)
        first = self._first_text.get(title_id)
        if first is None:
            self._first_text[title_id] = digest
            return title_id, ""
        if digest == first:
            return title_id, self._first_seen.get(title_id, record.origin)
        more = self._more_texts.setdefault(title_id, {})
        if digest in more:
            return title_id, more[digest]
        more[digest] = record.origin
        return f"{title_id}#{len(more) + 1}", ""
