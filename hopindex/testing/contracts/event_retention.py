"""The ``EventLog`` retention contract: a log keeps its newest events, and a reader whose
place was trimmed away is told (``EventsGoneError``), never silently moved on.

Apart from ``EventLogContract`` because its logs are opened differently: with a
retention of ``RETENTION`` events, trimmed exactly so the suite can count what is kept
(an adapter may trim approximately in production, keeping some more, as long as
what it reports is exact).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from hopindex.backends.protocols import EventLog
from hopindex.core.errors import EventsGoneError
from hopindex.testing.contracts.event_log import append, ids, new_index

RETENTION = 5
APPENDS = 12

OpenLog = Callable[[], EventLog]


class EventRetentionContract:
    """Subclass with an ``open_retained_log`` fixture: a factory of instances over one
    new, empty log location, each keeping the newest ``RETENTION`` events (trimmed
    exactly) and closed by the fixture; and ``read_method`` as ``EventLogContract``
    names it."""

    read_method: ClassVar[str] = ""

    @pytest.fixture
    def open_retained_log(self) -> OpenLog:
        raise NotImplementedError("the adapter's test class provides open_retained_log")

    def test_only_the_newest_events_are_kept(self, open_retained_log: OpenLog) -> None:
        """After 12 appends a log keeping 5 holds exactly the newest 5: a read from the
        start (no id) returns them in order, the trimmed ones are gone from
        ``get_event``, and the newest id is still the last."""
        log = open_retained_log()
        events = append(log, new_index(), APPENDS)
        assert ids(log.read_events(limit=100)) == ids(events[-RETENTION:])
        assert log.get_event(events[0].event_id) is None
        assert log.last_event_id() == events[-1].event_id

    def test_reading_after_a_trimmed_id_is_gone_naming_the_oldest_kept(
            self, open_retained_log: OpenLog) -> None:
        """Reading or waiting after an id with trimmed events after it raises
        EventsGoneError naming ``from``, the id asked for, the oldest id kept and the
        retention (its message too, with HOPINDEX_EVENT_RETENTION), with or without an
        index filter, instead of skipping to the oldest kept."""
        log = open_retained_log()
        index = new_index()
        events = append(log, index, APPENDS)
        oldest = events[-RETENTION].event_id
        for trimmed in (events[0].event_id, events[APPENDS - RETENTION - 2].event_id):
            with pytest.raises(EventsGoneError) as caught:
                log.read_events(after_id=trimmed)
            gone = caught.value
            assert (gone.where, gone.after_id, gone.oldest_id, gone.retention) == (
                "from", trimmed, oldest, RETENTION)
            for part in ("from", trimmed, oldest, "HOPINDEX_EVENT_RETENTION"):
                assert part in str(gone), part
            with pytest.raises(EventsGoneError):
                log.read_events(after_id=trimmed, index=index)
            with pytest.raises(EventsGoneError):
                log.wait_events(trimmed, None, timeout_s=0.1)

    def test_reading_after_a_kept_id_or_the_newest_trimmed_one_works(
            self, open_retained_log: OpenLog) -> None:
        """After a kept id a read returns exactly the events after it; after the newest
        trimmed id (nothing after it was trimmed) it returns every kept event."""
        log = open_retained_log()
        events = append(log, new_index(), APPENDS)
        kept = events[-RETENTION:]
        assert ids(log.read_events(after_id=kept[1].event_id)) == ids(kept[2:])
        assert ids(log.wait_events(kept[0].event_id, None, timeout_s=0.1)) == ids(kept[1:])
        newest_trimmed = events[-RETENTION - 1].event_id
        assert ids(log.read_events(after_id=newest_trimmed)) == ids(kept)

    def test_a_waiter_trimmed_past_between_its_reads_is_told(
            self, open_retained_log: OpenLog) -> None:
        """A wait on a quiet index whose first read found nothing, when more than the
        retention of other events is appended (by another instance) before its next
        read, raises EventsGoneError naming its id at that read instead of waiting on
        from past the gap."""
        log, writer = open_retained_log(), open_retained_log()
        index = new_index()
        cursor = append(writer, index, 1)[0].event_id
        original = getattr(log, self.read_method)
        reads: list[int] = []

        def read(*args: Any, **kwargs: Any) -> Any:
            found = original(*args, **kwargs)
            reads.append(len(reads))
            if len(reads) == 1:
                append(writer, new_index(), RETENTION + 2)
            return found

        setattr(log, self.read_method, read)
        with pytest.raises(EventsGoneError) as caught:
            log.wait_events(cursor, index, timeout_s=30)
        assert caught.value.after_id == cursor
        assert len(reads) == 1  # the read that found the gap raised before returning

    def test_ids_are_never_reused_after_a_trim(self, open_retained_log: OpenLog) -> None:
        """Once trimmed, and across a reopen, a log goes on issuing larger ids: an id
        issued again would let a reader's "after" skip or repeat events."""
        log = open_retained_log()
        events = append(log, new_index(), APPENDS)
        log.close()
        again = open_retained_log()
        newer = append(again, new_index(), 1)[0]
        assert newer.event_id not in ids(events)
        assert ids(again.read_events(after_id=events[-1].event_id)) == [newer.event_id]
