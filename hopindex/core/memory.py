"""How many malloc arenas a hopindex process keeps (glibc only).

glibc gives each thread that allocates concurrently an arena of its own, up to eight
per core, and memory freed into an arena stays with the process. A hopindex process
runs many threads (LLM calls in parallel, the embedding model's, the engines'), and
each arena keeps the high-water mark of whatever ran on it: a SiReRAG build of
HotpotQA-100 peaked at 1.47 GB with the default and 1.27 GB with two arenas, in the
same time.
The limit applies to arenas made after it is set, so it is set before any work.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

from hopindex.core.logging import get_logger

log = get_logger(__name__)

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def limit_malloc_arenas(arenas: int) -> bool:
    """Cap this process's malloc arenas at ``arenas`` (0: leave glibc's default).
    Returns whether the cap is set: not on other C libraries or platforms."""
    if arenas <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # musl and other C libraries have no arenas to cap
        return False
    done = bool(mallopt(ctypes.c_int(M_ARENA_MAX), ctypes.c_int(arenas)))
    log.debug("malloc_arenas_limited", arenas=arenas, done=done)
    return done
