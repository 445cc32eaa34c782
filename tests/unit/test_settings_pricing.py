"""Price sources in the config: a main network is never priced by the static table, two
stablecoins on a main network are each guarded by a feed (or explicitly not), and feeds
are well formed. Every refusal names the key to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intentd.settings import ConfigError, Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
ENV = {"INTENTD_DATABASE_URL": "postgresql://u:pw@db:5432/intentd", "INTENTD_HD_MNEMONIC": "w"}
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDT = "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9"
ETH_FEED = "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70"
USDC_FEED = "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B"
USDT_FEED = "0xf19d560eB8d2ADf07BD6D13ed03e1D11215721F9"


def feed(address: str = ETH_FEED, **changes: Any) -> dict[str, Any]:
    return {"address": address, "heartbeat": 1320, "min": "100", "max": "100000", **changes}


def token(address: str, symbol: str, **changes: Any) -> dict[str, Any]:
    return {
        "address": address,
        "symbol": symbol,
        "name": symbol,
        "decimals": 6,
        "category": "stablecoin",
        **changes,
    }


def chain(chain_id: int, network: str, **changes: Any) -> dict[str, Any]:
    return {
        "chain_id": chain_id,
        "network": network,
        "rpc_urls": ["http://x"],
        "relayer": USDC,
        **changes,
    }


def settings(chains: dict[str, Any], **sections: Any) -> Settings:
    return Settings.model_validate(
        {
            "database": {"url": "postgresql://x/y"},
            "kafka": {"bootstrap_servers": "k:1"},
            "chains": chains,
            **sections,
        }
    )


def refused(chains: dict[str, Any], **sections: Any) -> str:
    with pytest.raises(ValueError, match=r"\S") as raised:
        settings(chains, **sections)
    return str(raised.value)


def test_a_main_network_priced_by_the_static_table_refuses_to_start() -> None:
    # Before: prices.ETH = "3000" quoted every ETH intent on BASE at 3000 forever.
    message = refused({"BASE": chain(8453, "main")}, prices={"ETH": "3000"})
    assert "prices.ETH = '3000'" in message
    assert "chains.BASE.native.price_feed" in message


def test_the_static_table_still_prices_test_networks() -> None:
    found = settings({"BASE_TESTNET": chain(84532, "test")}, prices={"ETH": "3000"})
    assert found.prices == {"ETH": 3000}


def test_a_main_token_with_a_feed_may_share_its_symbol_with_a_statically_priced_test_one() -> None:
    found = settings(
        {
            "BASE": chain(8453, "main", native={"price_feed": feed()}),
            "BASE_TESTNET": chain(84532, "test"),
        },
        prices={"ETH": "3000"},
    )
    [only] = found.chains["BASE"].native.price_feed
    assert (only.address, only.heartbeat, only.chain) == (ETH_FEED, 1320, None)


def test_a_symbol_fed_on_one_main_chain_prices_it_on_every_main_chain() -> None:
    settings(
        {
            "BASE": chain(8453, "main", native={"price_feed": feed()}),
            "ARBITRUM": chain(42161, "main"),
        },
        prices={"ETH": "3000"},
    )


def test_two_stablecoins_on_a_main_network_without_feeds_refuse_to_start() -> None:
    message = refused(
        {"BASE": chain(8453, "main", tokens=[token(USDC, "USDC"), token(USDT, "USDT")])}
    )
    assert "chains.BASE.tokens.0.price_feed" in message
    assert "assume_peg" in message


def test_two_stablecoins_with_feeds_or_an_explicit_assumption_start() -> None:
    fed = [
        token(USDC, "USDC", price_feed=feed(USDC_FEED, min="0.5", max="2")),
        token(USDT, "USDT", price_feed=[feed(USDT_FEED, min="0.5", max="2")]),
    ]
    settings({"BASE": chain(8453, "main", tokens=fed)})
    assumed = [token(USDC, "USDC", assume_peg=True), fed[1]]
    settings({"BASE": chain(8453, "main", tokens=assumed)})
    half = [token(USDC, "USDC"), fed[1]]
    assert "chains.BASE.tokens.0.price_feed" in refused({"BASE": chain(8453, "main", tokens=half)})


def test_one_stablecoin_or_a_test_network_needs_no_feed() -> None:
    settings({"BASE": chain(8453, "main", tokens=[token(USDC, "USDC")])})
    both = [token(USDC, "USDC"), token(USDT, "USDT")]
    settings({"BASE_TESTNET": chain(84532, "test", tokens=both)})


@pytest.mark.parametrize(
    ("native", "expected"),
    [
        (
            {"price_feed": feed(chain="NOWHERE")},
            "chains.BASE.native.price_feed.0.chain = 'NOWHERE'",
        ),
        ({"price_feed": feed(chain="BASE_TESTNET")}, "a main network's token must be priced"),
        ({"price_feed": feed(min="10", max="10")}, "must be below max"),
        ({"price_feed": feed(heartbeat=0)}, "greater than 0"),
        ({"assume_peg": True}, "chains.BASE.native.assume_peg = true: ETH is not a stablecoin"),
    ],
)
def test_malformed_feeds_are_refused_naming_the_key(native: dict[str, Any], expected: str) -> None:
    chains = {"BASE": chain(8453, "main", native=native), "BASE_TESTNET": chain(84532, "test")}
    assert expected in refused(chains)


def test_max_read_age_covers_two_refreshes() -> None:
    message = refused(
        {"BASE_TESTNET": chain(84532, "test")},
        pricing={"refresh_interval": 10, "max_read_age": 15},
    )
    assert "pricing.max_read_age" in message


def test_the_example_config_prices_its_main_networks_by_feeds() -> None:
    relayers = {
        f"INTENTD_{c}_RELAYER": USDC
        for c in ("BASE", "ARBITRUM", "BASE_TESTNET", "ARBITRUM_TESTNET")
    }
    loaded = load_settings(ROOT / "config" / "example.toml", {**ENV, **relayers})
    for name in ("BASE", "ARBITRUM"):
        main = loaded.chains[name]
        assert main.network == "main"
        assert main.native.price_feed, name
        assert main.sequencer_uptime_feed, name
        for stable in main.tokens:
            assert stable.price_feed, (name, stable.symbol)


def test_the_refusal_reaches_the_operator_as_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[database]\nurl = "${INTENTD_DATABASE_URL}"\n[kafka]\nbootstrap_servers = "k:1"\n'
        '[prices]\nETH = "3000"\n[chains.BASE]\nchain_id = 8453\nnetwork = "main"\n'
        'rpc_urls = ["https://rpc.example"]\n'
    )
    with pytest.raises(ConfigError, match=r"prices\.ETH = '3000'"):
        load_settings(path, ENV)
