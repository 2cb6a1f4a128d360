"""The ``EventLog`` contract: what every event log adapter must do, embedded or server.

Event ids are opaque to callers, so an adapter's test class says how its ids order
(``id_key``) and names two ids the contract needs: one the log can never have
issued, and one older than any it issues. It also names the method a wait reads
through (``read_method``), which the waiting tests watch to know where a waiter is
instead of sleeping.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, ClassVar

import pytest

from hopindex.backends.protocols import EventLog
from hopindex.core.errors import BackendError, InvalidInputError
from hopindex.core.events import Event, EventType, Webhook
from hopindex.testing.waiting import wait_until

STARTED, PROGRESS, READY = EventType.JOB_STARTED, EventType.JOB_PROGRESS, EventType.INDEX_READY


def new_index() -> str:
    return f"ev-{uuid.uuid4().hex[:10]}"


def append(log: EventLog, index: str, n: int, *, job_id: str = "job-1",
           event_type: EventType = PROGRESS) -> list[Event]:
    return [log.append_event(event_type, index, job_id, {"n": i}) for i in range(n)]


def ids(events: list[Event]) -> list[str]:
    return [e.event_id for e in events]


def hook(index: str, name: str = "a", created_at: float = 1.0) -> Webhook:
    return Webhook(webhook_id=f"wh-{name}-{uuid.uuid4().hex[:6]}", index=index,
                   url=f"http://127.0.0.1:9/{name}", secret=f"secret-{name}",
                   created_at=created_at)


class ReadSpy:
    """Counts the reads of one of ``log``'s methods (shadowed on the instance): which
    have come back, in the order of ``mark``, so a test knows a reader is past a point."""

    def __init__(self, log: EventLog, method: str) -> None:
        self._ticks = itertools.count(1)
        self._returned: list[int] = []  # the tick at which each finished read began
        original = getattr(log, method)

        def read(*args: Any, **kwargs: Any) -> Any:
            began = next(self._ticks)
            try:
                return original(*args, **kwargs)
            finally:
                self._returned.append(began)

        setattr(log, method, read)

    def mark(self) -> int:
        """A tick later than every read begun so far."""
        return next(self._ticks)

    def returned_since(self, mark: int) -> bool:
        """Whether a read begun after ``mark`` has come back."""
        return any(began > mark for began in list(self._returned))

    def returned(self) -> int:
        """How many reads have come back."""
        return len(self._returned)


class EventLogContract:
    """Subclass with ``log`` and ``reopen_log`` fixtures, the three id hooks below and
    ``read_method``."""

    # The adapter's method each read of a wait goes through (the first one, and every
    # one after a wake-up or poll): the contract watches it to know where a waiter is.
    read_method: ClassVar[str] = ""

    # An id in this log's format that it can never have issued (far in the future).
    unissued_id: ClassVar[str] = ""
    # An id in this log's format older than every id it issues.
    before_all_id: ClassVar[str] = ""

    @staticmethod
    def id_key(event_id: str) -> Any:
        raise NotImplementedError("the adapter's test class says how its ids order")

    @pytest.fixture
    def log(self) -> Iterator[EventLog]:
        raise NotImplementedError("the adapter's test class provides the log fixture")

    @pytest.fixture
    def reopen_log(self) -> Callable[[], EventLog]:
        raise NotImplementedError("the adapter's test class provides the reopen_log fixture")

    # -- shape -------------------------------------------------------------------------------

    def test_is_an_event_log(self, log: EventLog) -> None:
        """The adapter satisfies the runtime-checkable protocol: every method exists."""
        assert isinstance(log, EventLog)
        names = [n for n in dir(EventLog) if not n.startswith("_")]
        assert all(callable(getattr(log, n)) for n in names)

    def test_empty_log_has_no_last_id_and_reads_nothing(self, log: EventLog) -> None:
        """A new log: no last id, nothing to read, no event under a well-formed id."""
        assert log.last_event_id() is None
        assert log.read_events() == []
        assert log.get_event(self.unissued_id) is None

    def test_event_round_trips(self, log: EventLog) -> None:
        """What append returns is what get and read return: type, index, job, nested
        data with non-ASCII text, and a creation time taken at append."""
        index = new_index()
        data = {"units": {"aku": 3, "bridge": 1}, "failed": ["d1"], "note": "Zürich ✓",
                "ratio": 0.5, "none": None}
        before = time.time()
        event = log.append_event(READY, index, "job-7", data)
        assert before - 1 <= event.created_at <= time.time() + 1
        assert (event.event_type, event.index, event.job_id, event.data) == (
            READY, index, "job-7", data)
        assert log.get_event(event.event_id) == event
        assert log.read_events(index=index) == [event]
        assert log.last_event_id() == event.event_id

    def test_data_that_is_not_json_is_refused(self, log: EventLog) -> None:
        """Data JSON cannot carry is an input error naming ``data``, and nothing is stored."""
        with pytest.raises(InvalidInputError) as caught:
            log.append_event(PROGRESS, new_index(), "job", {"when": object()})
        assert caught.value.where == "data"
        assert log.last_event_id() is None

    # -- ids and cursors ---------------------------------------------------------------------

    def test_ids_strictly_increase_in_append_order(self, log: EventLog) -> None:
        """Each append gets a larger id than the one before, and reads return that order."""
        events = append(log, new_index(), 25)
        keys = [self.id_key(i) for i in ids(events)]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        assert ids(log.read_events(limit=100)) == ids(events)

    def test_concurrent_appends_get_unique_ids_read_in_id_order(self, log: EventLog) -> None:
        """Appends from several threads at once: no id twice, none lost, and a read
        returns them in id order."""
        index = new_index()
        appended: list[Event] = []
        lock = threading.Lock()

        def work(worker: int) -> None:
            for i in range(20):
                event = log.append_event(PROGRESS, index, f"job-{worker}", {"i": i})
                with lock:
                    appended.append(event)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        read = log.read_events(index=index, limit=1000)
        assert len(read) == len(appended) == 80
        assert sorted(ids(appended), key=self.id_key) == ids(read)

    def test_read_after_an_id_resumes_exactly_after_it(self, log: EventLog) -> None:
        """Reading after the k-th id returns exactly the events appended after it, so a
        reader that keeps its last id neither misses nor repeats one."""
        events = append(log, new_index(), 10)
        for k in (0, 4, 9):
            assert ids(log.read_events(after_id=events[k].event_id)) == ids(events[k + 1:])
        assert log.read_events(after_id=events[-1].event_id) == []
        later = append(log, events[0].index, 2)
        assert ids(log.read_events(after_id=events[-1].event_id)) == ids(later)

    def test_limit_pages_through_in_order(self, log: EventLog) -> None:
        """``limit`` caps a read at the oldest events; paging by the last id read visits
        every event once."""
        events = append(log, new_index(), 7)
        assert ids(log.read_events(limit=3)) == ids(events[:3])
        seen: list[str] = []
        cursor = None
        while page := log.read_events(after_id=cursor, limit=3):
            seen += ids(page)
            cursor = page[-1].event_id
        assert seen == ids(events)
        with pytest.raises(InvalidInputError) as caught:
            log.read_events(limit=0)
        assert caught.value.where == "limit"

    def test_index_filter_skips_other_indexes(self, log: EventLog) -> None:
        """An index filter returns only that index's events, in order, with ``limit``
        counting matches, even past many other events in between."""
        mine, other = new_index(), new_index()
        first = append(log, mine, 2)
        append(log, other, 520)  # more than one read page of non-matching events
        second = append(log, mine, 3)
        assert ids(log.read_events(index=mine)) == ids(first + second)
        assert ids(log.read_events(index=mine, limit=3)) == ids((first + second)[:3])
        resumed = log.read_events(after_id=first[-1].event_id, index=mine, limit=2)
        assert ids(resumed) == ids(second[:2])
        assert len(log.read_events(index=other, limit=1000)) == 520
        assert log.read_events(index=new_index()) == []

    def test_malformed_and_unknown_ids_name_the_cursor(self, log: EventLog) -> None:
        """A cursor that is not an id of this log's format, or one it never issued, is an
        input error naming ``from`` for reads and waits; ``get_event`` just finds nothing."""
        append(log, new_index(), 2)
        for bad in ("not-an-id", "", "12abc", self.unissued_id):
            with pytest.raises(InvalidInputError) as caught:
                log.read_events(after_id=bad)
            assert caught.value.where == "from", bad
            with pytest.raises(InvalidInputError):
                log.wait_events(bad, None, 0.1)
            assert log.get_event(bad) is None

    def test_an_id_older_than_all_kept_reads_from_the_start(self, log: EventLog) -> None:
        """A cursor older than every kept event with nothing trimmed after it (an id from
        before the first append) resumes from the oldest kept event rather than
        failing; a cursor with trimmed events after it is EventRetentionContract's."""
        events = append(log, new_index(), 3)
        assert ids(log.read_events(after_id=self.before_all_id)) == ids(events)

    # -- waiting -----------------------------------------------------------------------------

    def test_wait_returns_an_event_appended_while_waiting(self, log: EventLog) -> None:
        """A waiter wakes for an event another thread appends during the wait, before its
        timeout, and gets only its index's event: another index's event, appended and
        read during the wait first, does not end it."""
        mine, other = new_index(), new_index()
        cursor = append(log, mine, 1)[0].event_id
        reads = ReadSpy(log, self.read_method)
        found: list[Event] = []
        elapsed: list[float] = []
        timeout_s = 30.0

        def wait() -> None:
            started = time.monotonic()
            found.extend(log.wait_events(cursor, mine, timeout_s=timeout_s))
            elapsed.append(time.monotonic() - started)

        waiter = threading.Thread(target=wait)
        waiter.start()
        # Past its first read, whatever is appended can only be found by waiting.
        wait_until(lambda: reads.returned_since(0), what="the waiter's first read")
        mark = reads.mark()
        log.append_event(PROGRESS, other, "job-x", {})
        # A read begun after that append has come back: the waiter has seen the other
        # index's event, and went on waiting unless it wrongly returns (then it finds
        # nothing below).
        wait_until(lambda: reads.returned_since(mark), what="a read of the other event")
        appended = log.append_event(READY, mine, "job-1", {"units": {}})
        waiter.join(timeout=2 * timeout_s)
        assert not waiter.is_alive()
        assert ids(found) == [appended.event_id]
        # Woken, not timed out: a wait that finds nothing returns no sooner than its
        # deadline, which it sets on entry (after ``started``), so a return before the
        # timeout was the append waking it. The steps up to the append take milliseconds
        # each, so the 30 s hold however busy the machine.
        assert elapsed[0] < timeout_s, elapsed

    def test_wait_returns_existing_events_at_once(self, log: EventLog) -> None:
        """Events already after the cursor are returned without waiting."""
        events = append(log, new_index(), 3)
        reads = ReadSpy(log, self.read_method)
        started = time.monotonic()
        assert ids(log.wait_events(events[0].event_id, None, 10, limit=1)) == ids(events[1:2])
        # Returned by its first read: a wait reads again after each poll or wake-up.
        assert reads.returned() == 1
        # Nothing is appended meanwhile, so a wait that did not return what was there
        # would run to its 10 s timeout; one read takes milliseconds, however busy the
        # machine, so returning before the timeout is returning at once.
        assert time.monotonic() - started < 10

    def test_wait_times_out_empty(self, log: EventLog) -> None:
        """With nothing new, a wait returns [] once its timeout has passed, not long after;
        from the start of an empty log too."""
        cursor = append(log, new_index(), 1)[0].event_id
        started = time.monotonic()
        assert log.wait_events(cursor, None, timeout_s=0.5) == []
        # Not before the timeout: the deadline is set on entry, after ``started``, and an
        # empty wait ends only past it, so load can only add. Not long after: past the
        # deadline a wait makes one more read at most (polls and blocks are cut to the
        # time left), milliseconds late on a busy machine; 3 s is a hang bound.
        assert 0.45 <= time.monotonic() - started < 3
        assert log.wait_events(None, new_index(), timeout_s=0.2) == []

    # -- webhooks ----------------------------------------------------------------------------

    def test_webhooks_put_list_delete(self, log: EventLog) -> None:
        """Webhooks come back whole (secret included), listed oldest first and filtered
        by index; putting an id again replaces it; deleting says whether one existed."""
        index, other = new_index(), new_index()
        a, b, c = hook(index, "a", 1.0), hook(index, "b", 2.0), hook(other, "c", 3.0)
        for w in (b, c, a):
            assert log.put_webhook(w) == w
        assert log.list_webhooks(index) == [a, b]
        assert log.list_webhooks(other) == [c]
        assert [w.webhook_id for w in log.list_webhooks()] == [a.webhook_id, b.webhook_id,
                                                              c.webhook_id]
        moved = Webhook(webhook_id=a.webhook_id, index=index, url="https://example.org/new",
                        secret="rotated", created_at=1.0)
        log.put_webhook(moved)
        assert log.list_webhooks(index) == [moved, b]
        assert log.delete_webhook(a.webhook_id) is True
        assert log.delete_webhook(a.webhook_id) is False
        assert log.list_webhooks(index) == [b]
        assert log.list_webhooks(new_index()) == []

    def test_webhooks_keep_the_decision_on_private_targets(self, log: EventLog) -> None:
        """Whether a webhook may reach internal addresses comes back as it was put: true,
        false, or not recorded (None), so every process delivering it decides alike."""
        index = new_index()
        allowed, public, unknown = (replace(hook(index, name, at), allow_private=value)
                                    for name, at, value in (("p", 1.0, True), ("q", 2.0, False),
                                                            ("r", 3.0, None)))
        for w in (allowed, public, unknown):
            log.put_webhook(w)
        assert [(w.webhook_id, w.allow_private) for w in log.list_webhooks(index)] == [
            (allowed.webhook_id, True), (public.webhook_id, False), (unknown.webhook_id, None)]

    def test_webhook_repr_hides_the_secret(self) -> None:
        """A webhook printed or logged does not show its secret."""
        assert "secret-a" not in repr(hook("x"))

    def test_use_after_close_is_a_backend_error(self, reopen_log: Callable[[], EventLog]
                                                ) -> None:
        """A closed log refuses work with BackendError; closing twice is harmless."""
        other = reopen_log()
        other.close()
        other.close()
        with pytest.raises(BackendError, match="closed"):
            other.read_events()

    # -- persistence -------------------------------------------------------------------------

    def test_events_and_webhooks_survive_reopen(self, log: EventLog,
                                                reopen_log: Callable[[], EventLog]) -> None:
        """A second instance over the same location sees every event and webhook, resumes
        from an id the first issued, and keeps issuing larger ids."""
        index = new_index()
        events = append(log, index, 3)
        webhook = log.put_webhook(hook(index))
        log.close()
        again = reopen_log()
        try:
            assert again.read_events(index=index) == events
            assert again.last_event_id() == events[-1].event_id
            assert again.list_webhooks(index) == [webhook]
            assert ids(again.read_events(after_id=events[0].event_id)) == ids(events[1:])
            newer = again.append_event(READY, index, "job-1", {})
            assert self.id_key(newer.event_id) > self.id_key(events[-1].event_id)
        finally:
            again.close()
