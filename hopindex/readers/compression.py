"""How an input file's bytes are stored, and reading them as a stream of decompressed bytes.

The registry in ``hopindex.readers`` pairs each suffix with a reader and a
``Compression`` (``.jsonl.gz`` is JSON Lines, gzip-compressed), and readers open
their file through :func:`open_binary`, so a format gains compression without its
reader knowing. A file that stops decompressing part way (truncated, corrupt) is a
:class:`SourceReadError` naming how far it got: what was read before stays read.
"""

from __future__ import annotations

import enum
import gzip
import zlib
from collections.abc import Iterator
from io import BufferedIOBase
from pathlib import Path

from hopindex.core.errors import InvalidInputError

# Bytes per read: large enough that a 1 GB corpus is a thousand reads, small enough
# that the chunk in hand never matters next to the records it holds.
READ_BYTES = 1 << 20


class Compression(enum.Enum):
    NONE = ""
    GZIP = ".gz"


class SourceReadError(InvalidInputError):
    """The file could not be read, or decompressed, past ``offset`` bytes of its content."""

    def __init__(self, reason: str, *, offset: int) -> None:
        self.reason = reason
        self.offset = offset
        super().__init__(f"read failed after {offset:,} bytes: {reason}")


# What reading a compressed file raises: I/O errors and a gzip header that is not one
# (BadGzipFile is an OSError), a stream that ends early, a corrupt deflate stream.
_READ_FAILURES = (OSError, EOFError, zlib.error)


def open_binary(path: Path, compression: Compression) -> BufferedIOBase:
    """``path`` opened for reading bytes, decompressed when ``compression`` says so.
    Raises OSError as ``Path.open`` does; a gzip file is checked only when read."""
    if compression is Compression.GZIP:
        return gzip.GzipFile(path, "rb")
    return path.open("rb")


def described(exc: BaseException) -> str:
    if isinstance(exc, gzip.BadGzipFile):
        return f"invalid gzip data ({exc})"
    if isinstance(exc, EOFError):
        return "the compressed data ends early (is the file truncated?)"
    if isinstance(exc, zlib.error):
        return f"corrupt compressed data ({exc})"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def read_line(fh: BufferedIOBase, limit: int, offset: int) -> bytes:
    """One line of at most ``limit`` bytes, as ``readline`` gives it; a failure is a
    SourceReadError at ``offset``, the bytes read before it."""
    try:
        return fh.readline(limit)
    except _READ_FAILURES as exc:
        raise SourceReadError(described(exc), offset=offset) from exc


def read_chunks(fh: BufferedIOBase, *, start_offset: int = 0) -> Iterator[bytes]:
    """The rest of ``fh`` in chunks of up to READ_BYTES; a failure is a SourceReadError
    naming the content offset it stopped at (``start_offset`` bytes were read before)."""
    offset = start_offset
    while True:
        try:
            chunk = fh.read(READ_BYTES)
        except _READ_FAILURES as exc:
            raise SourceReadError(described(exc), offset=offset) from exc
        if not chunk:
            return
        offset += len(chunk)
        yield chunk
