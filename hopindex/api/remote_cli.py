"""The CLI commands in remote mode (``hopindex --api URL``): the same arguments and the
same output as the local commands, with the work done by the server."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from hopindex.api.remote import ApiClient
from hopindex.core.budget import BudgetLimits

if TYPE_CHECKING:
    from hopindex.backends.protocols import JobStore


class RemoteCommands:
    def __init__(self, client: ApiClient) -> None:
        self.client = client

    def _jobs(self) -> JobStore:
        # The progress display only calls get_job, which the client answers like a store.
        return cast("JobStore", self.client)

    def ingest(self, index: str, paths: Sequence[Path], *, method: str | None, quiet: bool,
               as_json: bool, no_wait: bool, limits: BudgetLimits) -> None:
        from hopindex.api.cli_support import run_and_report

        run_and_report(self._jobs(), index,
                       lambda: self.client.ingest_paths(index, paths, method=method,
                                                        limits=limits),
                       in_process=False, quiet=quiet, as_json=as_json, no_wait=no_wait)

    def delete(self, index: str, doc_ids: Sequence[str], *, quiet: bool, as_json: bool,
               no_wait: bool) -> None:
        from hopindex.api.cli_support import run_and_report

        run_and_report(self._jobs(), index,
                       lambda: self.client.delete_documents(index, doc_ids),
                       in_process=False, quiet=quiet, as_json=as_json, no_wait=no_wait)

    def repair(self, index: str, *, check: bool, quiet: bool, as_json: bool,
               no_wait: bool) -> None:
        from hopindex.api.cli_support import print_outstanding, run_and_report

        if check:
            print_outstanding(index, self.client.describe_index(index, verify=True),
                              as_json=as_json)
            return
        run_and_report(self._jobs(), index, lambda: self.client.repair_index(index),
                       in_process=False, quiet=quiet, as_json=as_json, no_wait=no_wait)

    def rebuild(self, index: str, *, check: bool, quiet: bool, as_json: bool,
                no_wait: bool) -> None:
        from hopindex.api.cli_support import print_outstanding, run_and_report

        if check:
            print_outstanding(index, self.client.describe_index(index), as_json=as_json)
            return
        run_and_report(self._jobs(), index, lambda: self.client.rebuild_index(index),
                       in_process=False, quiet=quiet, as_json=as_json, no_wait=no_wait)

    def jobs(self, args: tuple[str, ...], *, index: str | None, limit: int, as_json: bool,
             follow: bool, limits: BudgetLimits) -> None:
        from hopindex.api.cli_support import console, err_console, print_jobs, report_job
        from hopindex.api.progress import follow_job
        from hopindex.api.render import render_job

        if len(args) == 2 and args[0] == "cancel":
            job = self.client.cancel_job(args[1])
        elif len(args) == 2 and args[0] == "resume":
            job = self.client.resume_job(args[1], limits)
        elif args:
            job = self.client.require_job(args[0])
            if follow:
                job = follow_job(self._jobs(), job.job_id, err_console, enabled=not as_json)
                report_job(job, as_json=as_json, max_errors=1000)
                return
        else:
            print_jobs(self.client.list_jobs(index, limit), as_json=as_json)
            return
        if as_json:
            click.echo(json.dumps(job.as_dict(), indent=2))
        else:
            render_job(console, job, max_errors=1000)

    def events(self, *, index: str | None, from_id: str | None, follow: bool,
               as_json: bool) -> None:
        from hopindex.api.events import render_event

        try:
            for event in self.client.stream_events(index, from_id, follow=follow):
                click.echo(json.dumps(event.as_dict()) if as_json else render_event(event))
        except KeyboardInterrupt:
            return

    def links_list(self, index: str, entity: str | None, *, as_json: bool) -> None:
        from hopindex.api.render_links import print_links, scope_label

        print_links(self.client.list_links(index, entity), as_json=as_json,
                    scope=scope_label(index, entity))

    def links_reject(self, index: str, link_id: str, by: str, *, as_json: bool) -> None:
        from hopindex.api.render_links import print_rejected

        print_rejected(self.client.reject_link(index, link_id, by), as_json=as_json)
