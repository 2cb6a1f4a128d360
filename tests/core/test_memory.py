"""The malloc-arena cap: set through glibc's mallopt in a process of its own, where
glibc reports how many arenas the threads made."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hopindex.core.memory import limit_malloc_arenas

# Eight threads allocate at once, then the script counts glibc's arenas from
# malloc_info's XML (one <heap> per arena).
COUNT_ARENAS = textwrap.dedent("""
    import ctypes, ctypes.util, sys, threading, tempfile, os
    from hopindex.core.memory import limit_malloc_arenas
    arenas = int(sys.argv[1])
    print(limit_malloc_arenas(arenas))
    barrier = threading.Barrier(8)
    def churn():
        barrier.wait()
        for _ in range(2000):
            blocks = [bytearray(4096) for _ in range(16)]
            del blocks
    threads = [threading.Thread(target=churn) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fdopen.restype = ctypes.c_void_p
    libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    fd, path = tempfile.mkstemp()
    stream = libc.fdopen(fd, b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(path).read().count("<heap nr="))
    os.unlink(path)
""")


def arenas_used(cap: int) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-c", COUNT_ARENAS, str(cap)], check=True,
                          capture_output=True, text=True)
    # The last two lines: a log line of the cap may come first.
    applied, count = done.stdout.splitlines()[-2:]
    return applied, int(count)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_cap_bounds_the_arenas_threads_make() -> None:
    """Eight allocating threads make more than two arenas by default and at most two
    under a cap of two."""
    default_applied, default_count = arenas_used(0)
    capped_applied, capped_count = arenas_used(2)
    assert default_applied == "False" and capped_applied == "True"
    assert capped_count <= 2 < default_count


def test_zero_leaves_the_default() -> None:
    assert limit_malloc_arenas(0) is False
