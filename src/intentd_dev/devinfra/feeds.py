"""Mock price feeds on the dev chains, at fixed addresses, and moving them.

``make infra-up`` places a ``contracts/MockAggregator.sol`` per priced token (ETH/USD,
USDC/USD, USDT/USD, 8 decimals) and one L2 sequencer uptime feed on each dev chain, at the
same fixed addresses on both (:data:`DEV_FEEDS`, :data:`SEQUENCER_FEED`), so
``config/local.toml`` names them without ``.local/infra.env``. They are placed by their
runtime code (``anvil_setCode``) and set up by transactions from the deployer; a feed
already there with the same code is kept as it is (a price someone moved stays moved).
They start live: ``latestRoundData`` reports the current block's time as ``updatedAt``,
so the dev stack's prices never go stale; ``set_round`` pins a round exactly (stale,
incomplete, out of bounds) and stops that.

``python -m intentd_dev.devinfra.feeds`` moves them from a shell (docs/local-infrastructure.md).
Chain calls use web3.py synchronously: dev and test tooling, not the daemon.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, cast

from eth_typing import ABI, ChecksumAddress, HexStr
from hexbytes import HexBytes
from web3 import Web3
from web3.types import RPCEndpoint

from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.contracts import Artifact, send_transaction, wait_for_success
from intentd_dev.devinfra.errors import InfraError

COMPONENT: Final = "feeds"
DECIMALS: Final = 8
UP, DOWN = 0, 1
_GAS: Final = 200_000


@dataclass(frozen=True)
class DevFeed:
    symbol: str
    address: ChecksumAddress
    usd: Decimal
    """The price it starts at."""


DEV_FEEDS: Final = (
    DevFeed(
        "ETH", Web3.to_checksum_address("0xfeed000000000000000000000000000000000001"), Decimal(3000)
    ),
    DevFeed(
        "USDC", Web3.to_checksum_address("0xfeed000000000000000000000000000000000002"), Decimal(1)
    ),
    DevFeed(
        "USDT", Web3.to_checksum_address("0xfeed000000000000000000000000000000000003"), Decimal(1)
    ),
)
SEQUENCER_FEED: Final = Web3.to_checksum_address("0xfeed0000000000000000000000000000000000ff")
"""The sequencer uptime feed: up since 1970 (``startedAt`` 1), so no grace applies."""
_CALLS_ABI: Final = cast(
    ABI,
    [
        {
            "type": "function",
            "name": name,
            "stateMutability": "nonpayable",
            "inputs": [{"name": f"a{i}", "type": kind} for i, kind in enumerate(inputs)],
            "outputs": [],
        }
        for name, inputs in (
            ("configure", ("uint8", "int256", "bool")),
            ("setAnswer", ("int256",)),
            ("setStatus", ("int256", "uint256")),
            ("setRoundData", ("uint80", "int256", "uint256", "uint256", "uint80")),
            ("setLive", ("bool",)),
        )
    ]
    + [
        {
            "type": "function",
            "name": "latestRoundData",
            "stateMutability": "view",
            "inputs": [],
            "outputs": [
                {"name": name, "type": kind}
                for name, kind in (
                    ("roundId", "uint80"),
                    ("answer", "int256"),
                    ("startedAt", "uint256"),
                    ("updatedAt", "uint256"),
                    ("answeredInRound", "uint80"),
                )
            ],
        }
    ],
)


def feed_address(symbol: str) -> ChecksumAddress:
    """The fixed address of the dev feed of ``symbol`` (``sequencer`` for the uptime feed)."""
    if symbol.lower() == "sequencer":
        return SEQUENCER_FEED
    for feed in DEV_FEEDS:
        if feed.symbol == symbol.upper():
            return feed.address
    names = ", ".join([f.symbol for f in DEV_FEEDS] + ["sequencer"])
    raise InfraError(COMPONENT, f"no dev feed for {symbol!r}; there are {names}")


def answer_of(usd: Decimal) -> int:
    """The integer answer (8 decimals) of ``usd``; refuses more precision than that."""
    scaled = usd.scaleb(DECIMALS)
    if scaled != scaled.to_integral_value():
        raise InfraError(COMPONENT, f"{usd} has more than {DECIMALS} decimals")
    return int(scaled)


def ensure_feeds(w3: Web3, artifact: Artifact) -> list[str]:
    """Place every dev feed missing from the chain (or running other code); the symbols
    of those placed now, in order (empty: all were there)."""
    if artifact.runtime is None:
        raise InfraError(COMPONENT, "the MockAggregator artifact has no runtime code")
    wanted = [(f.symbol, f.address) for f in DEV_FEEDS] + [("sequencer", SEQUENCER_FEED)]
    placed = [
        (symbol, address)
        for symbol, address in wanted
        if w3.eth.get_code(address).to_0x_hex() != artifact.runtime
    ]
    for _, address in placed:
        _anvil(w3, "anvil_setCode", [address, artifact.runtime])
    sent = []
    for _, address in placed:
        if address == SEQUENCER_FEED:
            sent += [_call(w3, address, "setStatus", UP, 1), _call(w3, address, "setLive", True)]
        else:
            usd = next(f.usd for f in DEV_FEEDS if f.address == address)
            sent.append(_call(w3, address, "configure", DECIMALS, answer_of(usd), True))
    wait_for_success(w3, sent)
    return [symbol for symbol, _ in placed]


def missing(w3: Web3) -> list[str]:
    """The dev feeds (symbols, ``sequencer``) with no code on the chain."""
    wanted = [(f.symbol, f.address) for f in DEV_FEEDS] + [("sequencer", SEQUENCER_FEED)]
    return [symbol for symbol, address in wanted if not w3.eth.get_code(address)]


def set_price(w3: Web3, address: ChecksumAddress, usd: Decimal) -> None:
    """Publish ``usd`` as a new round of the feed at ``address`` (mined on return)."""
    wait_for_success(w3, [_call(w3, address, "setAnswer", answer_of(usd))])


def set_round(
    w3: Web3,
    address: ChecksumAddress,
    *,
    round_id: int,
    answer: int,
    started_at: int,
    updated_at: int,
    answered_in_round: int,
) -> None:
    """Pin the feed's latest round exactly as given (it stops being live)."""
    args = (round_id, answer, started_at, updated_at, answered_in_round)
    wait_for_success(w3, [_call(w3, address, "setRoundData", *args)])


def set_live(w3: Web3, address: ChecksumAddress, live: bool) -> None:
    """Whether the feed reports the current block's time as its ``updatedAt``."""
    wait_for_success(w3, [_call(w3, address, "setLive", live)])


def set_sequencer(
    w3: Web3, *, up: bool, since: int, address: ChecksumAddress = SEQUENCER_FEED
) -> None:
    """Say the sequencer is up (or down) since ``since`` (unix seconds)."""
    wait_for_success(w3, [_call(w3, address, "setStatus", UP if up else DOWN, since)])


def latest_round(w3: Web3, address: ChecksumAddress) -> tuple[int, int, int, int, int]:
    """(roundId, answer, startedAt, updatedAt, answeredInRound) of the feed now."""
    contract = w3.eth.contract(address=address, abi=_CALLS_ABI)
    found: tuple[int, int, int, int, int] = contract.functions.latestRoundData().call()
    return found


def _call(w3: Web3, address: ChecksumAddress, function: str, *args: object) -> HexBytes:
    data = w3.eth.contract(address=address, abi=_CALLS_ABI).encode_abi(function, list(args))
    key = dev_account(Role.DEPLOYER).private_key
    # A fixed gas limit: an estimate made in the same second as the last round sees the
    # timestamp slots unchanged (cheap writes) and falls short once mined a second later.
    return send_transaction(w3, key, {"to": address, "data": HexStr(data), "gas": _GAS})


def _anvil(w3: Web3, method: str, params: Iterable[str]) -> None:
    answer = w3.provider.make_request(RPCEndpoint(method), list(params))
    if "error" in answer:
        raise InfraError(COMPONENT, f"{method} failed: {answer['error']}")
