"""JSON Lines (``.jsonl``, ``.ndjson``, either gzip-compressed): one record per line,
read as a stream.

The file is read line by line as bytes and each line decoded on its own, so a
corpus larger than memory can be ingested and one bad line (invalid JSON or
invalid UTF-8) costs only that line.
"""

from __future__ import annotations

from collections.abc import Iterator
from io import BufferedIOBase
from itertools import chain

from hopindex.readers.base import UTF8_BOM, Item, ReadError, ReadOptions, Source, decode_json_utf8
from hopindex.readers.compression import SourceReadError, read_chunks, read_line
from hopindex.readers.json_line import line_limit, parse_line
from hopindex.readers.jsonfile import read_json_stream

_SKIP_CHUNK = 1024 * 1024


def _physical_lines(fh: BufferedIOBase, limit: int) -> Iterator[tuple[int, int, bytes | None, int]]:
    """Yield (line number, byte offset, bytes or None when over ``limit``, size in bytes)."""
    lineno = 0
    offset = 0
    while True:
        chunk = read_line(fh, limit + 1, offset)
        if not chunk:
            return
        lineno += 1
        start = offset
        size = len(chunk)
        if size > limit and not chunk.endswith(b"\n"):
            # Skip the rest of the runaway line in bounded chunks, counting it.
            while not chunk.endswith(b"\n"):
                chunk = read_line(fh, _SKIP_CHUNK, start + size)
                if not chunk:
                    break
                size += len(chunk)
            offset += size
            yield lineno, start, None, size
            continue
        offset += size
        yield lineno, start, chunk, size


def read_jsonl(source: Source, options: ReadOptions) -> Iterator[Item]:
    limit = line_limit(options)
    try:
        fh = source.open_bytes()
    except OSError as exc:
        yield ReadError(source.origin, f"cannot open: {exc.strerror or exc}")
        return
    with fh:
        try:
            seen_content = False
            for lineno, offset, raw, size in _physical_lines(fh, limit):
                origin = f"{source.origin}:{lineno}"
                if raw is None:
                    yield ReadError(origin, f"line is {size:,} bytes, "
                                            f"{options.too_large()}")
                    continue
                if not seen_content and raw.strip():
                    seen_content = True
                    if raw.removeprefix(UTF8_BOM).lstrip().startswith(b"["):
                        # A JSON array saved as .jsonl: the JSON reader streams the rest.
                        # Skipped blank lines come back as newlines so line numbers still match.
                        pad = b"\n" * (lineno - 1)
                        chunks = chain((pad + raw,), read_chunks(fh, start_offset=offset + size))
                        yield from read_json_stream(chunks, source, options,
                                                    base_offset=offset - len(pad))
                        return
                # The decoder drops a BOM: at line 1, and where files were concatenated.
                line = decode_json_utf8(raw, origin, base_offset=offset)
                if isinstance(line, ReadError):
                    yield line
                    continue
                item = parse_line(line, origin, options)
                if item is not None:
                    yield item
        except SourceReadError as exc:
            yield ReadError(source.origin, str(exc))
