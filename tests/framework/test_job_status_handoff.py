"""At close, a session hands every job's status to its cache: all at once to a cache
with ``update_job_statuses`` (MemoryCache), one by one otherwise, and one by one
again when the bulk call raises, so that a host failing on one job loses only that
job's status. A host that watches statuses or events (its own ``update_job_status``
or ``record_event``, a mixin's, or one set on the object) gets each job's status
one by one, before that job's event."""

from __future__ import annotations

from typing import Any

from batchsched import JobInfo, MemoryCache, NodeInfo, PodGroup, Resource, Session, TaskInfo
from batchsched.api.types import PodGroupPhase
from batchsched.conf import configuration_from_text
from batchsched.framework.events import RecordedEvent

CONF = configuration_from_text("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n")


def fill(cache: Any) -> Any:
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 2, "pods": 10})))
    for name, cpu in (("fits", 1), ("too-big", 8), ("also-fits", 1)):
        job = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=1))
        job.add_task(TaskInfo.create("ns", f"{name}-0", job.uid, Resource.from_mapping(
            {"cpu": cpu})))
        cache.add_job(job)
    return cache


def statuses(cache: MemoryCache) -> dict[str, Any]:
    return {uid: (job.podgroup.phase, [(c.type, c.reason, c.message)
                                       for c in job.podgroup.conditions])
            for uid, job in sorted(cache.jobs.items())}


class OneByOne(MemoryCache):
    """A host that watches each status (so it keeps the one-by-one hand-off)."""

    def __init__(self) -> None:
        super().__init__(now=1.0)
        self.seen: list[str] = []

    def update_job_status(self, job: JobInfo) -> None:
        self.seen.append(job.uid)
        super().update_job_status(job)


class FailingInBulk(MemoryCache):
    """A host whose bulk call fails, and whose API refuses one pod group."""

    def __init__(self) -> None:
        super().__init__(now=1.0)
        self.bulk_calls = 0

    def update_job_statuses(self, jobs: Any) -> None:
        self.bulk_calls += 1
        raise ConnectionError("api server unreachable")

    def update_job_status(self, job: JobInfo) -> None:
        if job.uid == "ns/too-big":
            raise ConnectionError("409 conflict")
        super().update_job_status(job)


def test_memory_cache_takes_the_statuses_at_once_and_keeps_them() -> None:
    cache = fill(MemoryCache(now=1.0))
    assert callable(cache.update_job_statuses)
    ssn = Session.open(cache, CONF)
    ssn.close()
    got = statuses(cache)
    # The same statuses as a host taking them one by one.
    watcher = fill(OneByOne())
    Session.open(watcher, CONF).close()
    assert statuses(watcher) == got
    assert got["ns/too-big"][1][0][1] == "NotEnoughResources"
    assert all(phase == PodGroupPhase.PENDING for phase, _ in got.values())


def test_a_subclass_with_its_own_update_job_status_gets_every_job_through_it() -> None:
    cache = fill(OneByOne())
    assert cache.update_job_statuses is None
    Session.open(cache, CONF).close()
    assert sorted(cache.seen) == ["ns/also-fits", "ns/fits", "ns/too-big"]


def test_a_failing_bulk_call_falls_back_to_one_by_one() -> None:
    cache = fill(FailingInBulk())
    ssn = Session.open(cache, CONF)
    ssn.close()
    assert cache.bulk_calls == 1
    # Only the refused pod group's status is lost; both failures are on record.
    assert [(e.operation, e.obj) for e in ssn.host_errors] == [
        ("update_job_statuses", ""), ("update_job_status", "ns/too-big")]
    assert cache.jobs["ns/fits"].podgroup.conditions
    assert not cache.jobs["ns/too-big"].podgroup.conditions


def test_events_are_unaffected() -> None:
    cache = fill(MemoryCache(now=1.0))
    ssn = Session.open(cache, CONF)
    ssn.close()
    assert any(isinstance(e, RecordedEvent) and e.object == "ns/too-big" for e in cache.events)


class Audit:
    """A mixin watching each status."""

    seen: list[str]

    def update_job_status(self, job: JobInfo) -> None:
        self.seen.append(job.uid)
        super().update_job_status(job)  # type: ignore[misc]


class AuditedCache(Audit, MemoryCache):
    def __init__(self) -> None:
        super().__init__(now=1.0)
        self.seen = []


class EventWatcher(MemoryCache):
    """A host reading the stored status when a job's event arrives."""

    def __init__(self) -> None:
        super().__init__(now=1.0)
        self.at_event: dict[str, list[str]] = {}

    def record_event(self, event: RecordedEvent) -> None:
        job = self.jobs.get(event.object)
        if job is not None:
            self.at_event[event.object] = [c.reason for c in job.podgroup.conditions]
        super().record_event(event)


def test_a_mixin_s_update_job_status_gets_every_job() -> None:
    cache = fill(AuditedCache())
    assert cache.update_job_statuses is None
    Session.open(cache, CONF).close()
    assert sorted(cache.seen) == ["ns/also-fits", "ns/fits", "ns/too-big"]


def test_an_update_job_status_set_on_the_object_gets_every_job() -> None:
    cache = fill(MemoryCache(now=1.0))
    seen: list[str] = []
    keep = cache.update_job_status

    def spy(job: JobInfo) -> None:
        seen.append(job.uid)
        keep(job)

    cache.update_job_status = spy  # type: ignore[method-assign]
    Session.open(cache, CONF).close()
    assert sorted(seen) == ["ns/also-fits", "ns/fits", "ns/too-big"]


def test_each_job_s_event_comes_after_its_status() -> None:
    for cache in (fill(EventWatcher()), fill(MemoryCache(now=1.0))):
        if not isinstance(cache, EventWatcher):
            watched: dict[str, list[str]] = {}
            keep = cache.record_event

            def watch(event: RecordedEvent, cache: Any = cache,
                      watched: dict[str, list[str]] = watched, keep: Any = keep) -> None:
                job = cache.jobs.get(event.object)
                if job is not None:
                    watched[event.object] = [c.reason for c in job.podgroup.conditions]
                keep(event)

            cache.record_event = watch
        else:
            watched = cache.at_event
        Session.open(cache, CONF).close()
        assert watched["ns/too-big"] == ["NotEnoughResources"]
