from __future__ import annotations

from uuid import uuid4

from intentd.webhooks.matching import Subscription, event_mode, subscribers

CLIENT, OTHER = uuid4(), uuid4()


def sub(**changes: object) -> Subscription:
    fields: dict[str, object] = {
        "endpoint_id": uuid4(),
        "client_id": CLIENT,
        "mode": "test",
        "event_types": None,
        "enabled": True,
    }
    fields.update(changes)
    return Subscription(**fields)  # type: ignore[arg-type]


def test_client_mode_type_and_enabled_decide() -> None:
    everything = sub()
    funded_only = sub(event_types=frozenset({"intent_funded"}))
    live = sub(mode="live")
    disabled = sub(enabled=False)
    stranger = sub(client_id=OTHER)
    subs = [everything, funded_only, live, disabled, stranger]
    assert subscribers(subs, CLIENT, "test", "intent_funded") == [everything, funded_only]
    assert subscribers(subs, CLIENT, "test", "intent_completed") == [everything]
    assert subscribers(subs, CLIENT, "live", "intent_completed") == [live]


def test_event_mode_follows_the_source_chain_network() -> None:
    networks = {"BASE": "main", "BASE_TESTNET": "test"}
    assert event_mode({"intent": {"source_chain": "BASE"}}, networks) == "live"
    assert event_mode({"intent": {"source_chain": "BASE_TESTNET"}}, networks) == "test"
    assert event_mode({"intent": {"source_chain": "GONE"}}, networks) == "test"
    assert event_mode({"mode": "live", "intent": {}}, networks) == "live"
