"""The demo merchant's receiver (intentd_dev.webhook_receiver): keeps a correctly signed
event once, refuses a wrong or rotated-out signature, counts redeliveries."""

from __future__ import annotations

import json
import sys
import time

import aiohttp
import pytest

from intentd.webhooks.signing import new_secret, signed_headers
from intentd_dev.webhook_receiver import Receiver, describe_delivery, verifier_for, wait_signed

EVENT = {
    "id": "6f1c4b8e-0000-5000-8000-000000000001",
    "type": "intent_funded",
    "sequence": 1,
    "intent": {"id": 7, "intent_status": "PENDING", "funding_status": "UNDERFUNDED"},
    "data": {"funding": {"status": "UNDERFUNDED"}},
}


async def post(url: str, secret: str, event: dict[str, object]) -> int:
    body = json.dumps(event).encode()
    headers = signed_headers(str(event["id"]), int(time.time()), body, [secret])
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as r:
        return r.status


@pytest.mark.parametrize("library", ["standardwebhooks", "intentd.webhooks.signing"])
async def test_both_verifiers_accept_ours_and_refuse_another_secret(
    library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if library != "standardwebhooks":  # as if the package were not installed
        monkeypatch.setitem(sys.modules, "standardwebhooks.webhooks", None)
    secret = new_secret()
    check, used = verifier_for(secret)
    assert used == library
    body = json.dumps(EVENT).encode()
    now = int(time.time())
    assert check(body, signed_headers(EVENT["id"], now, body, [secret]))["id"] == EVENT["id"]
    with pytest.raises(ValueError, match=r"(?i)no matching signature"):
        check(body, signed_headers(EVENT["id"], now, body, [new_secret()]))
    with pytest.raises(ValueError, match=r"(?i)no matching signature"):
        check(body + b" ", signed_headers(EVENT["id"], now, body, [secret]))


async def test_the_receiver_keeps_each_signed_event_once_and_refuses_the_rest() -> None:
    seen: list[str] = []
    receiver = Receiver(on_event=lambda e: seen.append(describe_delivery(e)))
    url = await receiver.start()
    try:
        secret = new_secret()
        receiver.use_secret(secret)
        assert await post(url, secret, EVENT) == 204
        assert await post(url, secret, EVENT) == 204  # a redelivery: same webhook-id
        assert await post(url, new_secret(), {**EVENT, "id": "other"}) == 401
        assert seen == ["webhook intent_funded intent #7 seq 1 funding UNDERFUNDED [PENDING]"]
        assert (receiver.duplicates, receiver.refused) == (1, 1)
        assert receiver.sequences(7) == [1]
        assert await wait_signed(receiver, {EVENT["id"]}, 1) == set()
        assert await wait_signed(receiver, {EVENT["id"], "other"}, 0.1) == {"other"}
    finally:
        await receiver.stop()
