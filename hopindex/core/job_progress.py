"""How far a job is: per step, the items it finished of those planned; overall, one
figure that is honest at both ends and never goes down (docs/jobs.md).

A job record cannot know the work of the steps it has not planned yet: a phase counts
its items when it starts, and every later phase, and the embedding of what each one
wrote, adds to the totals as the job meets it. A figure of the work known so far would
read 100 % before the first phase starts (only validation counted) and again after
every step, then drop as the next one adds its work. So:

- validation, done before the job starts, is not counted: the job's work is what
  comes after it;
- until the job reaches its last step (finalize), the steps not planned yet count as
  unknown work still to do, as much as the largest step planned so far: the figure
  stays below 100, and a step planned later mostly takes the place of that unknown work;
- only a job that succeeded reads 100 %;
- the record keeps the highest figure it reported (``floor``), so a step that turns
  out larger than guessed holds the figure until the work done catches up, instead of
  taking back what was shown.

A step that planned nothing (0 of 0) is complete once the job has gone past it, and
at 0 % while it is the last step the job met: a job that failed planning it did
nothing of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

# The most a job that has not succeeded reads: 100 would claim work it has not done.
UNFINISHED_MAX = 99.9


class StepCounts(Protocol):
    """What the figures need of a step's counts (``core.models.StageCounts``)."""

    @property
    def total(self) -> int: ...

    @property
    def finished(self) -> int: ...


def _finished(counts: StepCounts) -> int:
    # Redelivered work can count an item twice: never more than the step planned.
    return min(counts.finished, counts.total)


def step_percents(counts: Mapping[str, StepCounts], *,
                  succeeded: bool) -> dict[str, dict[str, Any]]:
    """Per step, in the order the job met them: items finished, planned, and percent."""
    names = list(counts)
    steps: dict[str, dict[str, Any]] = {}
    for position, (name, step) in enumerate(counts.items()):
        finished = _finished(step)
        if step.total:
            percent = 100.0 * finished / step.total
        else:
            passed = succeeded or position < len(names) - 1
            percent = 100.0 if passed else 0.0
        steps[name] = {"finished": finished, "total": step.total, "percent": round(percent, 1)}
    return steps


def overall_percent(counts: Mapping[str, StepCounts], *, succeeded: bool, floor: float,
                    uncounted: str, last: str) -> float:
    """The job's one figure: ``uncounted`` names the step left out (validation),
    ``last`` the step that ends every job (finalize), ``floor`` the highest figure the
    record reported before."""
    if succeeded:
        return 100.0
    work = [step for name, step in counts.items() if name != uncounted]
    total = sum(step.total for step in work)
    finished = sum(_finished(step) for step in work)
    if last not in counts:
        total += max((step.total for step in work), default=0) or 1
    # Total 0 here: at its last step with nothing planned anywhere, all there was is done.
    percent = min(100.0 * finished / total, UNFINISHED_MAX) if total else UNFINISHED_MAX
    return max(round(percent, 1), min(floor, UNFINISHED_MAX))
