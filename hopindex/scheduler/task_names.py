"""The names of the tasks the scheduler sends: it sends by name and never imports a
task module, so the runtime's layers import one way (workers → scheduler).

The tasks themselves live under ``hopindex/workers/tasks/``; the app routes each
name to its queue (``hopindex/workers/app.py``).
"""

from __future__ import annotations

from hopindex.methods.plugin import PhaseKind

# A batch of one phase's work items, by the phase's kind (stage1 or stage2 queue).
PHASE_TASKS = {
    PhaseKind.DOCUMENTS: "hopindex.phase.documents",
    PhaseKind.GROUPS: "hopindex.phase.groups",
    PhaseKind.LEVELS: "hopindex.phase.levels",
}
EMBED = "hopindex.embed"
PURGE = "hopindex.purge"
# Control tasks: the chord callbacks that plan each next step of a job.
AFTER_PHASE = "hopindex.control.after_phase"
START_STEP = "hopindex.control.start_step"
FINALIZE = "hopindex.control.finalize"
# Starts an index's next queued job once the job ahead of it ended (scheduler/turns.py).
START_QUEUED = "hopindex.control.start_queued"
PING = "hopindex.control.ping"
REAP = "hopindex.control.reap"
# Follows the provider batches of jobs in batch mode (scheduler/provider_batches.py).
POLL_BATCHES = "hopindex.control.poll_batches"
DELIVER_WEBHOOK = "hopindex.deliver_webhook"
# A query method's query-time work (a batched LLM judge, say), on the judge queue.
QUERY_TASK = "hopindex.query_task"
