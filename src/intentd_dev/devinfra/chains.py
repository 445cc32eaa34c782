"""The two long-running dev chains and the test tokens deployed on them.

Each chain is an anvil daemon on a fixed port with the chain id of the test network it
stands in for. Its state file (``.local/run/anvil-<chain>.json``) records which anvil
process the tokens were deployed on; a restarted chain gets them again. anvil's default
mnemonic makes the deployer's nonces, and so the token addresses, the same every time.

A token the real test network has (USDC on Base Sepolia and Arbitrum Sepolia) is placed
at the real network's address (``DevChain.real_tokens``): deployed as usual, its code and
fixed storage (name, symbol, total supply) copied there with ``anvil_setCode`` and
``anvil_setStorageAt``, the deployed copy's code removed, then minted. Clients that check
token addresses against a table of the real networks' (the Chainrails SDK) accept them,
and the configuration names the same addresses as a deployment on the real networks.
"""

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import requests
from eth_typing import ChecksumAddress
from web3 import Web3
from web3.exceptions import Web3Exception
from web3.types import RPCEndpoint

from intentd_dev.devinfra import anvil, daemons
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.contracts import (
    Artifact,
    connect,
    has_code,
    send_deploy,
    send_mint,
    wait_for_success,
)
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout

BLOCK_TIME_ENV: Final = "INTENTD_DEV_BLOCK_TIME"
DEFAULT_BLOCK_TIME: Final = 1.0
MINT_WHOLE_TOKENS: Final = 1_000_000
_START_TIMEOUT: Final = 20.0


@dataclass(frozen=True)
class DevChain:
    name: str
    chain_id: int
    port: int
    real_tokens: Mapping[str, ChecksumAddress] = field(default_factory=dict, hash=False)
    """symbol -> the real test network's address, where the token is placed."""

    @property
    def url(self) -> str:
        return anvil.rpc_url(self.port)

    @property
    def component(self) -> str:
        """The name of its log, pidfile and state file in ``.local/run``."""
        return "anvil-" + self.name.lower().replace("_", "-")


@dataclass(frozen=True)
class DevToken:
    symbol: str
    name: str
    decimals: int


DEV_CHAINS: Final = (
    DevChain(
        "BASE_TESTNET",
        84532,
        18545,
        {"USDC": Web3.to_checksum_address("0x036cbd53842c5426634e7929541ec2318f3dcf7e")},
    ),
    DevChain(
        "ARBITRUM_TESTNET",
        421614,
        18546,
        {"USDC": Web3.to_checksum_address("0x75faf114eafb1bdbe2f0316df893fd58ce46aa4d")},
    ),
)
_FIXED_SLOTS: Final = 3
"""TestToken's storage before its mappings: name, symbol, totalSupply (decimals is code)."""
DEV_TOKENS: Final = (
    DevToken("USDC", "Test USD Coin", 6),
    DevToken("USDT", "Test Tether USD", 6),
)
TOKEN_HOLDERS: Final = (Role.PAYER, Role.RELAYER)


def block_time_from_env(env: Mapping[str, str] = os.environ) -> float | None:
    """Seconds per block from ``INTENTD_DEV_BLOCK_TIME`` (default 1); 0 means automine."""
    raw = env.get(BLOCK_TIME_ENV, str(DEFAULT_BLOCK_TIME))
    try:
        seconds = float(raw)
    except ValueError:
        raise InfraError("anvil", f"{BLOCK_TIME_ENV}={raw!r} is not a number") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise InfraError("anvil", f"{BLOCK_TIME_ENV}={raw!r} must be >= 0")
    return seconds or None


@dataclass(frozen=True)
class ChainState:
    """What ``up`` recorded: the anvil process and the tokens deployed on it."""

    pid: int
    tokens: dict[str, ChecksumAddress]


def ensure_chain(
    layout: Layout,
    chain: DevChain,
    block_time: float | None,
    artifact: Artifact,
    say: Callable[[str], None],
) -> tuple[dict[str, ChecksumAddress], bool]:
    """Make `chain` run with the dev tokens deployed and minted.

    Returns the tokens (symbol -> address) and whether they had to be deployed, which
    means the chain started from genesis (or lost its tokens) in this call.
    """
    label = f"anvil {chain.name}"
    pid = daemons.running_pid(layout.pidfile(chain.component), "anvil")
    if pid is not None and anvil.rpc_chain_id(chain.port) != chain.chain_id:
        say(f"{label}: pid {pid} does not answer on {chain.url}; restarting it")
        daemons.terminate(pid, "anvil")
        pid = None
    if pid is None:
        pid = _start(layout, chain, block_time)
        say(f"{label}: started chain {chain.chain_id} on {chain.url} (pid {pid})")
    else:
        say(f"{label}: running, chain {chain.chain_id} on {chain.url} (pid {pid})")
    state = read_state(layout, chain)
    try:
        with connect(chain.url) as w3:
            if state is not None and state.pid == pid and _deployed(w3, chain, state.tokens):
                return state.tokens, False
            tokens = provision_tokens(w3, artifact, chain.real_tokens)
    except (Web3Exception, requests.RequestException) as error:
        message = f"deploying the test tokens failed: {error}"
        raise InfraError(label, message, layout.log(chain.component)) from error
    _write_state(layout, chain, ChainState(pid, tokens))
    listed = ", ".join(f"{symbol} {address}" for symbol, address in tokens.items())
    say(f"{label}: deployed {listed}; minted to payer and relayer")
    return tokens, True


def provision_tokens(
    w3: Web3, artifact: Artifact, real_tokens: Mapping[str, ChecksumAddress] | None = None
) -> dict[str, ChecksumAddress]:
    """Deploy `DEV_TOKENS` from the deployer, place those `real_tokens` names at their
    address (anvil only), and mint `MINT_WHOLE_TOKENS` to each holder."""
    deployer = dev_account(Role.DEPLOYER).private_key
    deploys = [
        send_deploy(w3, deployer, t.name, t.symbol, t.decimals, artifact=artifact)
        for t in DEV_TOKENS
    ]
    tokens: dict[str, ChecksumAddress] = {}
    for token, receipt in zip(DEV_TOKENS, wait_for_success(w3, deploys), strict=True):
        address = receipt["contractAddress"]
        if address is None:
            raise InfraError("contracts", f"deploying {token.symbol} created no contract")
        tokens[token.symbol] = address
    for symbol, real in (real_tokens or {}).items():
        place_contract(w3, tokens[symbol], real, _FIXED_SLOTS)
        tokens[symbol] = real
    holders = [dev_account(role).address for role in TOKEN_HOLDERS]
    mints = [
        send_mint(w3, deployer, tokens[t.symbol], holder, MINT_WHOLE_TOKENS * 10**t.decimals)
        for t in DEV_TOKENS
        for holder in holders
    ]
    wait_for_success(w3, mints)
    return tokens


def place_contract(w3: Web3, deployed: ChecksumAddress, at: ChecksumAddress, slots: int) -> None:
    """Move the contract at `deployed` to `at`: its code and its first `slots` storage
    slots (anvil's ``anvil_setCode``/``anvil_setStorageAt``); `deployed` keeps no code."""
    _anvil(w3, "anvil_setCode", [at, w3.eth.get_code(deployed).to_0x_hex()])
    for slot in range(slots):
        value = w3.eth.get_storage_at(deployed, slot).to_0x_hex()
        _anvil(w3, "anvil_setStorageAt", [at, hex(slot), "0x" + value[2:].rjust(64, "0")])
    _anvil(w3, "anvil_setCode", [deployed, "0x"])


def _anvil(w3: Web3, method: str, params: list[str]) -> None:
    answer = w3.provider.make_request(RPCEndpoint(method), params)
    if "error" in answer:
        raise InfraError("contracts", f"{method} failed: {answer['error']}")


def stop_chain(layout: Layout, chain: DevChain) -> bool:
    """Stop the chain's anvil if it runs (its state is lost); True if it did."""
    stopped = daemons.stop(layout.pidfile(chain.component), "anvil")
    layout.state(chain.component).unlink(missing_ok=True)
    return stopped


def chain_status(layout: Layout, chain: DevChain) -> tuple[bool, str]:
    """Whether the chain runs with its tokens deployed, and one line that says so."""
    pid = daemons.running_pid(layout.pidfile(chain.component), "anvil")
    if pid is None:
        return False, "stopped"
    if anvil.rpc_chain_id(chain.port) != chain.chain_id:
        return False, f"pid {pid} runs but {chain.url} does not answer with {chain.chain_id}"
    state = read_state(layout, chain)
    with connect(chain.url) as w3:
        deployed = state is not None and state.pid == pid and _deployed(w3, chain, state.tokens)
    where = f"chain {chain.chain_id} on {chain.url} (pid {pid})"
    if state is None or not deployed:
        return False, f"running, {where}, but the test tokens are missing"
    listed = ", ".join(f"{symbol} {address}" for symbol, address in state.tokens.items())
    return True, f"running, {where}; {listed}"


def read_state(layout: Layout, chain: DevChain) -> ChainState | None:
    try:
        raw = json.loads(layout.state(chain.component).read_text())
        tokens = {str(k): Web3.to_checksum_address(v) for k, v in raw["tokens"].items()}
        return ChainState(int(raw["pid"]), tokens)
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent or unreadable: deploy again


def _write_state(layout: Layout, chain: DevChain, state: ChainState) -> None:
    path = layout.state(chain.component)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": state.pid, "tokens": state.tokens}, indent=1) + "\n")
    tmp.replace(path)


def _deployed(w3: Web3, chain: DevChain, tokens: Mapping[str, ChecksumAddress]) -> bool:
    """The tokens are all there, each real one at its real address (a chain provisioned
    before tokens were placed is provisioned again)."""
    wanted = {t.symbol for t in DEV_TOKENS}
    placed = all(tokens.get(symbol) == real for symbol, real in chain.real_tokens.items())
    return (
        set(tokens) == wanted
        and placed
        and all(has_code(w3, address) for address in tokens.values())
    )


def _start(layout: Layout, chain: DevChain, block_time: float | None) -> int:
    label, log = f"anvil {chain.name}", layout.log(chain.component)
    if anvil.port_in_use(chain.port):
        raise InfraError(label, f"port {chain.port} is taken by a process infra-up did not start")
    layout.state(chain.component).unlink(missing_ok=True)
    argv = anvil.anvil_argv(anvil.anvil_binary(layout), chain.chain_id, chain.port, block_time)
    spawned = daemons.spawn(argv, log=log, pidfile=layout.pidfile(chain.component))
    try:
        anvil.wait_for_chain(
            chain.port,
            chain.chain_id,
            exit_status=spawned.exit_status,
            timeout=_START_TIMEOUT,
            component=label,
            log=log,
        )
    except InfraError:
        daemons.terminate(spawned.pid, "anvil")
        raise
    return spawned.pid
