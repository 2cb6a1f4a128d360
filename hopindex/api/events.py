"""Reading the event log for people and scripts (``hopindex events``), and webhook
registration (``hopindex webhooks add``)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from hopindex.backends.protocols import EventLog
from hopindex.core.errors import EventsGoneError, InvalidInputError
from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.redact import redact_url
from hopindex.scheduler.webhook_targets import check_webhook_url
from hopindex.scheduler.webhooks import new_secret, normalize_secret, standard_secret

PAGE = 100


class Follower:
    """One reader's place in the log, read a page at a time: ``cursor`` is the last
    event handed out, what the reader resumes after. With an index filter it also keeps
    its position, the newest id known to hold no unread event of the index: a quiet
    index's reader then moves on with the log as other indexes' events pass, rather
    than keep resuming from its last event until the retention trims past it. A
    reader that does fall behind (events after its place were trimmed before it read
    them) gets the log's ``EventsGoneError``, named by its cursor."""

    def __init__(self, log: EventLog, index: str | None, after_id: str | None) -> None:
        self._log = log
        self._index = index
        self.cursor = after_id
        self._position = after_id

    def _page(self, read: Callable[[str | None], list[Event]]) -> list[Event]:
        # Taken before the read: every event up to it is visible to that read, so when
        # the read finds none of the index, none of them is left unread.
        head = self._log.last_event_id() if self._index is not None else None
        try:
            page = read(self._position)
        except EventsGoneError as exc:
            if self.cursor is None or exc.after_id == self.cursor:
                raise
            raise EventsGoneError(self.cursor, exc.oldest_id, exc.retention) from None
        if page:
            self.cursor = self._position = page[-1].event_id
        elif head is not None:
            self._position = head
        return page

    def read(self) -> list[Event]:
        """The next page of events, at once (fewer than ``PAGE``: the log's end)."""
        return self._page(lambda start: self._log.read_events(after_id=start, index=self._index,
                                                              limit=PAGE))

    def wait(self, timeout_s: float) -> list[Event]:
        """The next page, waiting up to ``timeout_s`` for one to be appended."""
        return self._page(lambda start: self._log.wait_events(start, self._index, timeout_s,
                                                              limit=PAGE))


def follow_events(log: EventLog, *, index: str | None, after_id: str | None, follow: bool,
                  poll_timeout_s: float = 1.0,
                  stop: Callable[[], bool] | None = None) -> Iterator[Event]:
    """Every event after ``after_id`` (None: from the oldest kept), oldest first; with
    ``follow``, then each new one as it is appended, until ``stop()`` is true or
    Ctrl-C. ``stop`` is checked between waits, so it takes effect within
    ``poll_timeout_s``. A reader that falls behind the log's retention, at the start
    or while following, gets ``EventsGoneError``."""
    follower = Follower(log, index, after_id)
    while True:
        batch = follower.read()
        yield from batch
        if len(batch) < PAGE:
            break
    if not follow:
        return
    try:
        while stop is None or not stop():
            yield from follower.wait(poll_timeout_s)
    except KeyboardInterrupt:
        # Ctrl-C is how a follower is meant to end, not an error.
        return


def _counts(counts: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def _progress(data: dict[str, Any]) -> str:
    """``stage done/total`` for each stage that has work, e.g. ``validate 6/6 embed 3/12``."""
    parts = []
    for stage, counts in (data.get("counts") or {}).items():
        if isinstance(counts, dict) and counts.get("total"):
            failed = f" failed={counts['failed']}" if counts.get("failed") else ""
            parts.append(f"{stage} {counts.get('done', 0)}/{counts['total']}{failed}")
    return " ".join(parts)


def summarize(event: Event) -> str:
    """A short human summary of ``event.data``; the full data is in ``--json``."""
    data = event.data
    if event.event_type is EventType.INDEX_READY:
        parts = [f"units {_counts(data.get('units') or {})}".rstrip()]
        if "documents" in data:
            parts.append(f"documents={data['documents']}")
        if data.get("failed"):
            parts.append(f"failed={','.join(map(str, data['failed']))}")
        if "duration_s" in data:
            parts.append(f"in {data['duration_s']}s")
        return " ".join(parts)
    parts = []
    if data.get("phase"):
        parts.append(f"phase={data['phase']}")
    if event.event_type is EventType.JOB_STARTED and data.get("kind"):
        parts.append(f"kind={data['kind']}")
    progress = _progress(data)
    if progress:
        parts.append(progress)
    if data.get("errors"):
        parts.append(f"errors={data['errors']}")
    if data.get("reason"):
        parts.append(f"reason={data['reason']!r}")
    return " ".join(parts)


def render_event(event: Event) -> str:
    """One line: id, UTC time, type, index, job, summary."""
    when = datetime.fromtimestamp(event.created_at, tz=UTC).isoformat(timespec="seconds")
    line = (f"{event.event_id}  {when.replace('+00:00', 'Z')}  {event.event_type.value:<13} "
            f"{event.index:<16} job={event.job_id}")
    summary = summarize(event)
    return f"{line}  {summary}" if summary else line


def validate_webhook_url(url: str, *, allow_private: bool = False) -> str:
    """``url`` when it is an http(s) URL whose host webhooks may reach (see
    ``scheduler/webhook_targets.py``); else InvalidInputError naming ``url``."""
    check_webhook_url(url, allow_private=allow_private)
    return url


def register_webhook(log: EventLog, index: str, url: str, secret: str | None, *,
                     allow_private: bool = False) -> Webhook:
    """Store a webhook for ``index``'s events. The secret is kept in the Standard
    Webhooks form (``whsec_`` + base64); a random one is made when none is given (it
    is returned, and shown once). Targets on loopback, private and other internal
    addresses are refused unless ``allow_private``
    (``HOPINDEX_WEBHOOK_ALLOW_PRIVATE`` of the registering process), which is stored
    with the webhook: every process delivering its events obeys it, whatever its own
    setting."""
    validate_webhook_url(url, allow_private=allow_private)
    if secret is None:
        stored = new_secret()
    else:
        try:
            stored = normalize_secret(secret)
        except ValueError as exc:
            raise InvalidInputError(str(exc), where="secret") from None
    webhook = Webhook(webhook_id=f"wh-{secrets.token_hex(8)}", index=index, url=url,
                      secret=stored, created_at=time.time(), allow_private=allow_private)
    return log.put_webhook(webhook)


def webhook_view(hook: Webhook, *, with_secret: bool = False) -> dict[str, Any]:
    """A webhook as the API shows it: the URL without its userinfo or secret-looking
    query values (a read key sees every listing), the secret only when asked."""
    view: dict[str, Any] = {"id": hook.webhook_id, "index": hook.index,
                            "url": redact_url(hook.url), "created_at": hook.created_at,
                            "allow_private": hook.allow_private}
    if with_secret:
        view["secret"] = standard_secret(hook.secret)
    return view
