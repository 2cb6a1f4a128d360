"""Input readers: files and folders in, RawDocuments and ReadErrors out.

One module per format; ``register_reader`` maps file suffixes to a reader, so a
new format is one module and one call, and the suffixes registered here are the
only list of what ingest accepts (``accepted_suffixes``). A format registered with a
compression is also read compressed (``corpus.jsonl.gz``). Every problem with the
input becomes a ``ReadError`` naming the file, line or field, and never stops the
other records.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from hopindex.core.errors import InvalidInputError
from hopindex.core.ids import doc_id_from_title
from hopindex.core.text import DEFAULT_MAX_DOCUMENT_BYTES, printable
from hopindex.readers.base import (
    Item,
    RawDocument,
    Reader,
    ReadError,
    ReadOptions,
    ReadResult,
    Source,
)
from hopindex.readers.compression import Compression
from hopindex.readers.jsonfile import read_json
from hopindex.readers.jsonl import read_jsonl
from hopindex.readers.textfile import read_text_file

__all__ = [
    "Compression",
    "RawDocument",
    "ReadError",
    "ReadOptions",
    "ReadResult",
    "Reader",
    "Source",
    "accepted_suffixes",
    "iter_documents",
    "read_paths",
    "register_reader",
]

_READERS: dict[str, tuple[Reader, Compression]] = {}


def register_reader(suffixes: Iterable[str], reader: Reader, *,
                    compressions: Iterable[Compression] = (Compression.NONE,)) -> None:
    """Route files with these suffixes (".ext", any case) to ``reader``, once for each
    of ``compressions`` (``.jsonl`` and ``.jsonl.gz``); the last call wins. The reader
    opens its file with ``Source.open_bytes``, which decompresses."""
    kinds = tuple(compressions)
    for suffix in suffixes:
        if not suffix.startswith("."):
            raise InvalidInputError(f"a suffix starts with '.', got {suffix!r}", where="suffixes")
        for compression in kinds:
            _READERS[suffix.lower() + compression.value] = (reader, compression)


def accepted_suffixes() -> tuple[str, ...]:
    return tuple(sorted(_READERS))


# JSON corpora are the ones large enough to ship compressed, and export writes .gz.
register_reader((".jsonl", ".ndjson"), read_jsonl, compressions=tuple(Compression))
register_reader((".json",), read_json, compressions=tuple(Compression))
register_reader((".txt", ".md", ".markdown"), read_text_file)


def _accepted_text() -> str:
    return ", ".join(accepted_suffixes()) + ", or a folder of such files"


def _registered(name: str) -> tuple[Reader, Compression] | None:
    """The reader of the longest registered suffix ``name`` ends with (``.jsonl.gz``
    before ``.gz``); a name that is only a suffix (``.json``) has none."""
    lowered = name.lower()
    found = [s for s in _READERS if lowered.endswith(s) and len(lowered) > len(s)]
    return _READERS[max(found, key=len)] if found else None


def _unregistered_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    compressed = len(suffixes) > 1 and suffixes[-1] in {c.value for c in Compression if c.value}
    return "".join(suffixes[-2:]) if compressed else path.suffix.lower()


def _read_file(source: Source, options: ReadOptions) -> Iterator[Item]:
    registered = _registered(source.path.name)
    if registered is None:
        suffix = _unregistered_suffix(source.path)
        kind = f"file type {suffix!r}" if suffix else "file without an extension"
        yield ReadError(source.origin, f"unsupported {kind}; accepted: {_accepted_text()}")
        return
    reader, compression = registered
    yield from reader(replace(source, compression=compression), options)


def _folder_files(folder: Path) -> tuple[list[Path], list[ReadError]]:
    """Every file under ``folder``, sorted by relative path, hidden files and folders skipped.

    Hidden entries (.git, .obsidian, .DS_Store) are tool state, not documents.
    Symlinked folders are not followed, so a link cycle cannot loop the walk.
    A subfolder that cannot be listed is reported rather than silently skipped.
    """
    found: list[Path] = []
    errors: list[ReadError] = []

    def unreadable(exc: OSError) -> None:
        errors.append(ReadError(printable(str(exc.filename or folder)),
                                f"cannot list folder: {exc.strerror or exc}"))

    for root, dirs, files in os.walk(folder, onerror=unreadable):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(root) / name for name in files if not name.startswith("."))
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix()), errors


def _read_path(path: Path, options: ReadOptions) -> Iterator[Item]:
    # A name that is not valid UTF-8 (Linux allows any bytes) arrives holding
    # surrogates: origins are written with escapes so errors naming them can be stored.
    origin = printable(str(path))
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except OSError as exc:
        yield ReadError(origin, f"cannot access: {exc.strerror or exc}")
        return
    if is_dir:
        files, errors = _folder_files(path)
        yield from errors
        if not files and not errors:
            yield ReadError(origin, f"folder holds no files; accepted: {_accepted_text()}")
        for file in files:
            relative = file.relative_to(path).as_posix()
            yield from _read_file(Source(file, printable(str(file)), relative), options)
    elif exists:
        yield from _read_file(Source(path, origin, path.name), options)
    else:
        yield ReadError(origin, "no such file or directory")


def _identity(doc: RawDocument) -> tuple[str, str] | None:
    # Downstream a document without an id is identified by its title, so two
    # id-less records with one title would silently overwrite each other.
    if doc.doc_id is not None:
        return ("id", doc.doc_id)
    if doc.title:
        return ("title", doc_id_from_title(doc.title))
    return None


def iter_documents(paths: Sequence[Path], *,
                   max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> Iterator[Item]:
    """Documents and errors in input order, streamed; duplicates reported, first one kept."""
    if max_document_bytes < 1:
        raise InvalidInputError(f"must be positive, got {max_document_bytes}",
                                where="max_document_bytes")
    options = ReadOptions(max_document_bytes=max_document_bytes)
    first_seen: dict[tuple[str, str], str] = {}
    for path in paths:
        for item in _read_path(Path(path), options):
            if isinstance(item, RawDocument):
                key = _identity(item)
                if key is not None:
                    earlier = first_seen.get(key)
                    if earlier is not None:
                        what = (f"id {item.doc_id!r}" if key[0] == "id"
                                else f"title {item.title!r} (records without an id are "
                                     "identified by their title)")
                        yield ReadError(item.origin, f"duplicate {what}: first seen at "
                                                     f"{earlier}; kept that one")
                        continue
                    first_seen[key] = item.origin
            yield item


def read_paths(paths: Sequence[Path], *,
               max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> ReadResult:
    """Read files and folders into RawDocuments; every problem is a ReadError, none fatal."""
    result = ReadResult()
    for item in iter_documents(paths, max_document_bytes=max_document_bytes):
        if isinstance(item, RawDocument):
            result.documents.append(item)
        else:
            result.errors.append(item)
    return result
