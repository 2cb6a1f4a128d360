"""Job records as JSON documents; updates are serialised read-modify-writes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.backends.state.scope_pages import scope_of_pages, scope_pages
from hopindex.core.errors import BackendError, NotFoundError
from hopindex.core.models import Dispatch, Job, JobState

_FINAL = tuple(state.value for state in JobState if state.is_final)


class JobsMixin(SqliteConnection):
    def create_job(self, job: Job) -> None:
        """Store a new job; an id already in use is refused rather than overwritten."""
        try:
            with self._transaction("create_job", write=True) as conn:
                conn.execute("INSERT INTO jobs (job_id, idx, created_at, data) VALUES (?, ?, ?, ?)",
                             (job.job_id, job.index, job.created_at, dumps(job.as_dict())))
        except BackendError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise BackendError(f"job {job.job_id} already exists") from exc
            raise

    def get_job(self, job_id: str) -> Job | None:
        with self._transaction("get_job", write=False) as conn:
            row = conn.execute("SELECT data FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return Job.from_dict(json.loads(row[0])) if row else None

    def update_job(self, job_id: str, change: Callable[[Job], None], *,
                   once: str = "") -> Job:
        """Apply ``change`` to the stored job and save it, with no other writer in between.

        BEGIN IMMEDIATE takes the database write lock before the read, so two
        processes counting finished tasks on one job never lose an increment.
        If ``change`` raises, nothing is written and the exception propagates.
        """
        with self._transaction("update_job", write=True) as conn:
            row = conn.execute("SELECT data FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"job {job_id} not found")
            job = Job.from_dict(json.loads(row[0]))
            if once and conn.execute("SELECT 1 FROM job_settled WHERE job_id = ? AND key = ?",
                                     (job_id, once)).fetchone():
                return job
            change(job)
            if once:
                conn.execute("INSERT INTO job_settled (idx, job_id, key) VALUES (?, ?, ?)",
                             (job.index, job_id, once))
            if job.job_id != job_id:
                raise BackendError(f"update_job: the change renamed job {job_id} "
                                   f"to {job.job_id}")
            conn.execute("UPDATE jobs SET idx = ?, created_at = ?, data = ? WHERE job_id = ?",
                         (job.index, job.created_at, dumps(job.as_dict()), job_id))
        return job

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]:
        """Jobs newest first, optionally of one index only."""
        if limit <= 0:
            return []
        where, params = ("WHERE idx = ?", [index]) if index is not None else ("", [])
        with self._transaction("list_jobs", write=False) as conn:
            rows = conn.execute(f"SELECT data FROM jobs {where}"
                                " ORDER BY created_at DESC, rowid DESC LIMIT ?",
                                [*params, limit]).fetchall()
        return [Job.from_dict(json.loads(data)) for (data,) in rows]

    def open_jobs(self, index: str) -> list[Job]:
        """The index's unfinished jobs, in the order they were created (rowid: the
        order of the inserts, whatever the clocks of the processes that made them)."""
        marks = ", ".join("?" for _ in _FINAL)
        with self._transaction("open_jobs", write=False) as conn:
            rows = conn.execute(f"SELECT data FROM jobs WHERE idx = ? AND json_extract(data, "
                                f"'$.state') NOT IN ({marks}) ORDER BY rowid",
                                [index, *_FINAL]).fetchall()
        return [Job.from_dict(json.loads(data)) for (data,) in rows]

    def add_dispatch(self, job_id: str, dispatch: Dispatch) -> None:
        with self._transaction("add_dispatch", write=True) as conn:
            conn.execute("INSERT INTO dispatches (job_id, data) VALUES (?, ?)",
                         (job_id, dumps(dispatch.as_dict())))

    def last_dispatch(self, job_id: str) -> Dispatch | None:
        with self._transaction("last_dispatch", write=False) as conn:
            row = conn.execute("SELECT data FROM dispatches WHERE job_id = ?"
                               " ORDER BY seq DESC LIMIT 1", (job_id,)).fetchone()
        return Dispatch.from_dict(json.loads(row[0])) if row else None

    def clear_dispatches(self, job_id: str) -> None:
        with self._transaction("clear_dispatches", write=True) as conn:
            conn.execute("DELETE FROM dispatches WHERE job_id = ?", (job_id,))

    def put_job_scope(self, job_id: str, scope: Mapping[str, Any]) -> None:
        pages = scope_pages(scope)
        with self._transaction("put_job_scope", write=True) as conn:
            conn.execute("DELETE FROM job_scopes WHERE job_id = ?", (job_id,))
            conn.executemany("INSERT INTO job_scopes (job_id, page, data) VALUES (?, ?, ?)",
                             [(job_id, n, page) for n, page in enumerate(pages)])

    def get_job_scope(self, job_id: str) -> dict[str, Any] | None:
        with self._transaction("get_job_scope", write=False) as conn:
            rows = conn.execute("SELECT data FROM job_scopes WHERE job_id = ? ORDER BY page",
                                (job_id,)).fetchall()
        return scope_of_pages([data for (data,) in rows])

    def delete_job_scope(self, job_id: str) -> None:
        with self._transaction("delete_job_scope", write=True) as conn:
            conn.execute("DELETE FROM job_scopes WHERE job_id = ?", (job_id,))

    def settled_keys(self, job_id: str, keys: Sequence[str]) -> set[str]:
        with self._transaction("settled_keys", write=False) as conn:
            rows = conn.execute("SELECT key FROM job_settled WHERE job_id = ? AND key IN "
                                "(SELECT value FROM json_each(?))",
                                (job_id, id_list(keys))).fetchall()
        return {key for (key,) in rows}
