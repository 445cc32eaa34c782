"""The parent of ``intentd api --workers N`` is ready while every worker says it is
(``api.workers``): a worker's ``n`` (its database away) turns the parent not ready,
its ``r`` ready again."""

from __future__ import annotations

import asyncio
import os

import pytest

from intentd.api import workers
from intentd.runtime import Readiness


async def test_the_parent_follows_what_each_worker_last_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readiness = Readiness()  # the process's own is left alone
    monkeypatch.setattr(workers, "READINESS", readiness)
    readiness.expect(workers.READY_NAME)
    pipes = [os.pipe() for _ in range(2)]
    readers: list[workers._WorkerReadiness] = []
    heard = asyncio.Event()

    def changed() -> None:
        workers._report(readers, 2)
        heard.set()

    readers += [workers._WorkerReadiness(read, changed) for read, _ in pipes]

    async def say(index: int, word: bytes) -> None:
        heard.clear()
        os.write(pipes[index][1], word)
        await asyncio.wait_for(heard.wait(), 5)

    def ready() -> bool:
        return workers.READY_NAME not in readiness.missing()

    try:
        await say(0, b"r")
        assert not ready(), "one worker of two"
        await say(1, b"r")
        await asyncio.wait_for(workers._all_ready(readers), 5)
        assert ready()
        await say(1, b"n")  # its database is away
        assert not ready()
        await say(1, b"r")
        assert ready()
    finally:
        for reader in readers:
            reader.close()
        for _, write in pipes:
            os.close(write)
