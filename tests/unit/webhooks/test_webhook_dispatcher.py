"""The dispatch loop with fake ports: signing, isolation of slow endpoints, retries."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from standardwebhooks.webhooks import Webhook
from tests.log_capture import own_logs
from tests.unit.webhooks.webhook_fakes import FakeSender, FakeStore

from intentd.supervision import POSTGRESQL, Health, supervise
from intentd.supervision.dependencies import BUG
from intentd.webhooks.dispatcher import Dispatcher
from intentd.webhooks.ports import Attempt, DueDelivery, RecordedAttempt
from intentd.webhooks.secret_box import SecretBox
from intentd.webhooks.signing import new_secret

BOX = SecretBox(os.urandom(32))


def delivery(
    n: int,
    url: str,
    secrets: list[str],
    endpoint: UUID | None = None,
    client: UUID | None = None,
) -> DueDelivery:
    endpoint = endpoint or uuid4()
    return DueDelivery(
        id=n,
        endpoint_id=endpoint,
        client_id=client or uuid4(),
        url=url,
        event_id=f"evt-{n}",
        body=b'{"n":%d}' % n,
        sealed_secrets=tuple(BOX.seal(s, endpoint) for s in secrets),
        round_attempts=0,
        failing_since=None,
    )


async def test_a_slow_endpoint_does_not_delay_another() -> None:
    now = datetime.now(UTC)
    secret = new_secret()
    store = FakeStore()
    store.pending = [(now, delivery(1, "slow", [secret])), (now, delivery(2, "fast", [secret]))]
    sender = FakeSender(lambda url: Attempt(200, 0.01), gates={"slow": asyncio.Event()})
    dispatcher = Dispatcher(store, sender, BOX, lambda: now)
    assert await dispatcher.dispatch_once() == 2
    for _ in range(50):
        if store.attempts:
            break
        await asyncio.sleep(0.01)
    assert [d.url for d, _, _ in store.attempts] == ["fast"]
    _url, headers, body = sender.sent[0]
    Webhook(secret).verify(body, headers, json_parse=False)
    assert headers["webhook-id"] == "evt-2"
    sender.gates["slow"].set()
    await dispatcher.drain()
    assert sorted(d.url for d, _, _ in store.attempts) == ["fast", "slow"]


async def test_failures_are_retried_on_schedule_with_the_same_id_and_body() -> None:
    clock = [datetime.now(UTC)]
    store = FakeStore()
    old, new = new_secret(), new_secret()
    store.pending = [(clock[0], delivery(1, "flaky", [new, old]))]
    answers = iter([Attempt(None, 1.0, error="timeout"), Attempt(500, 0.1), Attempt(204, 0.1)])
    sender = FakeSender(lambda url: next(answers))
    dispatcher = Dispatcher(store, sender, BOX, lambda: clock[0])
    for _ in range(3):
        await dispatcher.dispatch_once()
        await dispatcher.drain()
        clock[0] += timedelta(minutes=1)
    decisions = [decision for _, _, decision in store.attempts]
    assert [d.delivered for d in decisions] == [False, False, True]
    assert {h["webhook-id"] for _, h, _ in sender.sent} == {"evt-1"}
    assert {b for _, _, b in sender.sent} == {b'{"n":1}'}
    for _, headers, _body in sender.sent:
        assert len(headers["webhook-signature"].split(" ")) == 2
    # The dispatcher signs at the clock's time; standardwebhooks checks it against its own.
    assert abs(int(sender.sent[0][1]["webhook-timestamp"]) - time.time()) < 60


async def test_run_stops_and_finishes_what_is_in_flight() -> None:
    now = datetime.now(UTC)
    store = FakeStore()
    store.pending = [(now, delivery(n, f"u{n}", [new_secret()])) for n in range(5)]
    gates = {f"u{n}": asyncio.Event() for n in range(5)}
    sender = FakeSender(lambda url: Attempt(200, 0.0), gates=gates)
    dispatcher = Dispatcher(store, sender, BOX, lambda: now, idle_poll=0.01)
    stop = asyncio.Event()
    task = asyncio.create_task(dispatcher.run(stop))
    deadline = time.monotonic() + 10
    while store.pending:  # until all five are in flight, not for 0.05 s
        assert time.monotonic() < deadline, store.pending
        await asyncio.sleep(0.005)
    stop.set()
    for gate in gates.values():  # their answers come after the stop
        gate.set()
    await asyncio.wait_for(task, 10)
    assert len(store.attempts) == 5


def test_a_batch_of_attempts_changes_each_endpoint_once_in_time_order() -> None:
    from intentd.adapters.postgres.webhook_attempts import _endpoint_changes
    from intentd.webhooks.ports import RecordedAttempt
    from intentd.webhooks.schedule import Decision, DisableReason

    t0 = datetime.now(UTC)
    a, b = uuid4(), uuid4()
    ok = Decision(delivered=True, next_attempt_at=None)
    retry = Decision(delivered=False, next_attempt_at=t0 + timedelta(seconds=5))
    gone = Decision(delivered=False, next_attempt_at=None, disable=DisableReason.GONE)

    def rec(endpoint: UUID, decision: Decision, seconds: int) -> RecordedAttempt:
        return RecordedAttempt(
            delivery(seconds, "u", [new_secret()], endpoint),
            Attempt(200 if decision.delivered else 500, 0.0),
            decision,
            t0 + timedelta(seconds=seconds),
        )

    changes = {
        c.endpoint_id: c
        for c in _endpoint_changes(
            [rec(a, retry, 3), rec(a, ok, 1), rec(a, retry, 2), rec(b, gone, 2), rec(b, ok, 3)]
        )
    }
    # a: success at 1, failures from 2 on; b: disabled at 2 stays disabled.
    assert (changes[a].succeeded, changes[a].failed_at) == (False, t0 + timedelta(seconds=2))
    assert changes[a].disable is None
    assert (changes[b].succeeded, changes[b].disable) == (True, "gone")


async def test_secrets_never_reach_the_logs() -> None:

    now = datetime.now(UTC)
    secret = new_secret()
    store = FakeStore()
    store.pending = [(now, delivery(1, "down", [secret]))]
    sender = FakeSender(lambda url: Attempt(None, 1.0, error="timeout"))
    dispatcher = Dispatcher(store, sender, BOX, lambda: now)
    with own_logs() as logs:
        await dispatcher.dispatch_once()
        await dispatcher.drain()
    assert logs and logs[0]["error"] == "timeout"
    assert secret not in repr(logs) and secret.removeprefix("whsec_") not in repr(logs)


async def test_a_hostile_retry_after_is_recorded_with_a_bounded_wait() -> None:
    """An endpoint answering 429 with a Retry-After no parser expects: the attempt is
    recorded and the next one waits at most a day (it was never recorded, and the
    delivery sent again each time its lease expired)."""
    from intentd.webhooks.schedule import MAX_RETRY_AFTER

    now = datetime.now(UTC)
    for value in ("99999999999999999999", "²", "Fri, 31 Dec 99999 23:59:59 GMT", "-1", "NaN"):
        store = FakeStore()
        store.pending = [(now, delivery(1, "hostile", [new_secret()]))]
        sender = FakeSender(lambda url, v=value: Attempt(429, 0.01, retry_after=v))  # type: ignore[misc]
        dispatcher = Dispatcher(store, sender, BOX, lambda: now)
        await dispatcher.dispatch_once()
        await dispatcher.drain()
        assert len(store.attempts) == 1, value
        (_, attempt, decision) = store.attempts[0]
        assert attempt.retry_after == value
        assert decision.next_attempt_at is not None
        assert now < decision.next_attempt_at <= now + MAX_RETRY_AFTER


class DatabaseAway(FakeStore):
    """Records nothing: its connection is refused (PostgreSQL away mid-flight)."""

    async def record_attempts(self, attempts: Sequence[RecordedAttempt]) -> None:
        raise ConnectionRefusedError(111, "Connect call failed")


async def test_attempts_not_recorded_in_a_database_outage_are_the_outage_not_a_line_each() -> None:
    """A database away while 30 deliveries are in flight: their records fail. That is
    told by the process's outage log in one line (each failure counted in it), not as a
    traceback per delivery; the leases expire and the deliveries are sent again."""
    now = datetime.now(UTC)
    store = DatabaseAway()
    store.pending = [(now, delivery(n, f"u{n}", [new_secret()])) for n in range(30)]
    dispatcher = Dispatcher(store, FakeSender(lambda url: Attempt(200, 0.0)), BOX, lambda: now)
    health = Health()

    async def dispatch(stop: asyncio.Event) -> None:
        assert await dispatcher.dispatch_once() == 30
        await dispatcher.drain()

    with own_logs() as logs:
        await supervise("webhooks dispatcher", dispatch, asyncio.Event(), health=health,
                        diagnose=lambda error: BUG)  # fmt: skip
    assert [entry["event"] for entry in logs] == ["dependency unavailable"], logs
    assert logs[0]["dependency"] == "postgresql" and "exc_info" not in logs[0]
    assert health.is_down(POSTGRESQL)


async def test_an_attempt_not_recorded_for_another_reason_is_logged_with_its_traceback() -> None:
    now = datetime.now(UTC)

    class Broken(FakeStore):
        async def record_attempts(self, attempts: Sequence[RecordedAttempt]) -> None:
            raise ValueError("a bug")

    store = Broken()
    store.pending = [(now, delivery(1, "u", [new_secret()]))]
    dispatcher = Dispatcher(store, FakeSender(lambda url: Attempt(200, 0.0)), BOX, lambda: now)
    with own_logs() as logs:
        await dispatcher.dispatch_once()
        await dispatcher.drain()
    [line] = logs
    assert line["event"] == "webhook attempt not recorded" and "exc_info" in line
