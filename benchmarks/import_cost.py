"""What importing hopindex costs a process: ``import hopindex`` (what a worker pays
before it loads its own modules) and ``from hopindex import Client`` (an application),
against a bare interpreter, in fresh processes, the three interleaved round by round
so the machine's noise falls on all alike.

Also counts the modules each loads: ``import hopindex`` must load no front door (the
client resolves on first use), and the client must load no runtime (the service,
Celery, torch) until a client is opened.

    .venv/bin/python benchmarks/import_cost.py --rounds 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CASES = {
    "bare interpreter": "pass",
    "import hopindex": "import hopindex",
    "from hopindex import Client": "from hopindex import Client",
}
# Printed by each case's process: which of its modules are loaded, by family.
PROBE = ("import json, sys; m = list(sys.modules); print(json.dumps({"
         "'hopindex': sum(n.startswith('hopindex') for n in m), "
         "'front doors': sum(n == 'hopindex.api.cli' or n.startswith(('hopindex.api.cli_', "
         "'hopindex.api.http')) for n in m), "
         "'runtime': sum(n.startswith(('hopindex.api.service', 'hopindex.workers', "
         "'hopindex.scheduler', 'celery', 'torch')) for n in m)}))")


def timed(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def loaded(code: str) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", f"{code}\n{PROBE}"], check=True,
                         capture_output=True, text=True).stdout
    counts: dict[str, int] = json.loads(out)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.rounds):
        for name, code in CASES.items():
            times[name].append(timed(code))
    bare = statistics.median(times["bare interpreter"])
    print(f"{'case':<30} {'median ms':>10} {'over bare ms':>13}  modules loaded")
    for name, code in CASES.items():
        median = statistics.median(times[name])
        print(f"{name:<30} {median * 1000:>10.1f} {(median - bare) * 1000:>13.1f}  "
              f"{loaded(code)}")


if __name__ == "__main__":
    main()
