"""Run the test suite while other processes hold CPU cores busy, to shake out tests that
only pass on an idle machine.

CI runs on a 2-core machine that is often busy; a test that waits a fixed time, or
bounds a rate or a latency tuned on an idle machine, fails there and blocks every
landing. With ``--hogs 1`` (the default) one core spins for the whole run, so every
worker process, Redis and the test server share the other one.

    python tools/test_under_load.py                     # the whole suite, one core busy
    python tools/test_under_load.py --hogs 2 -- -m integration tests/workers

Everything after ``--`` goes to pytest (default ``-q``). Prints the pytest time, the
CPU the hogs took (so a run that claims a busy core shows it had one) and exits with
pytest's status.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A pure-Python busy loop: one process holds one core at 100 % for as long as it runs.
HOG = "while True: pass"


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of ``pid`` from /proc (0 where /proc is absent)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command name: state is field 3, utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=1,
                        help="busy processes to run beside the tests (default 1)")
    parser.add_argument("pytest_args", nargs="*", default=["-q"],
                        help="arguments for pytest, after --")
    args = parser.parse_args(argv)
    if args.hogs < 0:
        parser.error("--hogs must be 0 or more")

    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", *args.pytest_args],
                                cwd=ROOT, check=False)
    finally:
        wall = time.monotonic() - started
        held = [cpu_seconds(hog.pid) for hog in hogs]
        for hog in hogs:
            hog.kill()
            hog.wait()
    shares = ", ".join(f"{cpu / wall:.0%}" for cpu in held) or "none"
    print(f"test_under_load: pytest exit {result.returncode} in {wall / 60:.1f} min "
          f"with {args.hogs} busy process(es) beside it (CPU share each: {shares}; "
          f"{os.cpu_count()} cores)", flush=True)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
