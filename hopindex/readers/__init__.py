"""Input readers: files and folders in, RawDocuments and ReadErrors out.

Two kinds of input. Record files (JSON, JSON Lines) hold many documents each;
``register_reader`` maps their suffixes to a reader, and one registered with a
compression is also read compressed (``corpus.jsonl.gz``). Document files (PDF,
HTML, DOCX, Markdown, text; ``files/``) are recognised by their content first and
split by their structure. Every problem with the input becomes a ``ReadError``
naming the file, page, line or field, and never stops the other files or records.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from hopindex.core.errors import InvalidInputError
from hopindex.core.settings import Settings
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
from hopindex.readers.files.reading import (
    HEAD_BYTES,
    SUFFIXES,
    describe_content,
    read_document_file,
    sniff_format,
)
from hopindex.readers.identity import RecordIdentities
from hopindex.readers.jsonfile import read_json
from hopindex.readers.jsonl import read_jsonl
from hopindex.readers.options import FileLimits, Reading, SplitBy

__all__ = [
    "Compression",
    "FileLimits",
    "RawDocument",
    "ReadError",
    "ReadOptions",
    "ReadResult",
    "Reader",
    "Reading",
    "Source",
    "SplitBy",
    "accepted_suffixes",
    "iter_documents",
    "read_options",
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


# JSON corpora are the ones large enough to ship compressed, and export writes .gz.
register_reader((".jsonl", ".ndjson"), read_jsonl, compressions=tuple(Compression))
register_reader((".json",), read_json, compressions=tuple(Compression))


def accepted_suffixes() -> tuple[str, ...]:
    """Every suffix ingest reads: record formats and document files."""
    return tuple(sorted({*_READERS, *SUFFIXES}))


def read_options(settings: Settings, reading: Reading | None = None) -> ReadOptions:
    """The settings' limits with the caller's choices (how to split, which files)."""
    limits = FileLimits(max_file_bytes=settings.max_file_bytes,
                        max_html_bytes=settings.max_html_bytes,
                        max_pages=settings.max_file_pages, max_zip_ratio=settings.max_zip_ratio,
                        max_zip_expanded_bytes=settings.max_zip_expanded_bytes)
    return ReadOptions(max_document_bytes=settings.max_document_bytes, file_limits=limits,
                       reading=reading or Reading())


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
    """By content first: a document file's bytes say its format whatever its name;
    record files (and compressed ones) by their suffix."""
    registered = _registered(source.path.name)
    if registered is not None and registered[1] is not Compression.NONE:
        reader, compression = registered
        yield from reader(replace(source, compression=compression), options)
        return
    try:
        # A pipe is read once, by its record reader: looking at its head would eat it.
        head = _head(source.path) if stat.S_ISREG(source.path.stat().st_mode) else b""
    except OSError as exc:
        yield ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
        return
    suffix = source.path.suffix.lower()
    file_format = sniff_format(head, suffix)
    if file_format is not None and (registered is None or suffix in SUFFIXES
                                    or file_format.value in ("pdf", "docx", "html")):
        yield from read_document_file(source, options, file_format, head)
    elif registered is not None:
        reader, compression = registered
        yield from reader(replace(source, compression=compression), options)
    else:
        suffix = _unregistered_suffix(source.path)
        named = SUFFIXES.get(suffix)
        if named is not None:
            what = f"named {suffix!r} but holds {describe_content(head)}"
        else:
            kind = f"file type {suffix!r}" if suffix else "file without an extension"
            what = f"unsupported {kind} ({describe_content(head)})"
        yield ReadError(source.origin, f"{what}; accepted: {_accepted_text()}")


def _head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_BYTES)


def _folder_files(folder: Path, options: ReadOptions) -> tuple[list[Path], list[ReadError]]:
    """The files under ``folder`` that ``options`` selects, sorted by relative path,
    hidden files and folders skipped.

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
    selected = [p for p in found if options.reading.selects(p.relative_to(folder).as_posix())]
    return sorted(selected, key=lambda p: p.relative_to(folder).as_posix()), errors


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
        files, errors = _folder_files(path, options)
        yield from errors
        if not files and not errors:
            reading = options.reading
            chosen = " matching --include/--exclude" if reading.include or reading.exclude else ""
            yield ReadError(origin, f"folder holds no files{chosen}; accepted: "
                                    f"{_accepted_text()}")
        for file in files:
            relative = file.relative_to(path).as_posix()
            yield from _read_file(Source(file, printable(str(file)), relative), options)
    elif exists:
        yield from _read_file(Source(path, origin, path.name), options)
    else:
        yield ReadError(origin, "no such file or directory")


def iter_documents(paths: Sequence[Path], *,
                   max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
                   options: ReadOptions | None = None) -> Iterator[Item]:
    """Documents and errors in input order, streamed; duplicates reported, first one kept.

    Which records are the same document: ``readers/identity.py``. ``options`` (when
    given) carries its own ``max_document_bytes``."""
    if options is None:
        options = ReadOptions(max_document_bytes=max_document_bytes)
    if options.max_document_bytes < 1:
        raise InvalidInputError(f"must be positive, got {options.max_document_bytes}",
                                where="max_document_bytes")
    identities = RecordIdentities()
    for path in paths:
        for item in _read_path(Path(path), options):
            if isinstance(item, RawDocument):
                admitted = identities.admit(item)
                yield (ReadError(item.origin, admitted.duplicate) if admitted.duplicate
                       else admitted.record)
            else:
                yield item


def read_paths(paths: Sequence[Path], *,
               max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
               options: ReadOptions | None = None) -> ReadResult:
    """Read files and folders into RawDocuments; every problem is a ReadError, none fatal."""
    result = ReadResult()
    for item in iter_documents(paths, max_document_bytes=max_document_bytes, options=options):
        if isinstance(item, RawDocument):
            result.documents.append(item)
        else:
            result.errors.append(item)
    return result
