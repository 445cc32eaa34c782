"""The test contracts: compiling them (``contracts/*.sol``), deploying and minting the ERC-20.

``contracts/TestToken.sol`` is the test ERC-20; ``contracts/Forwarder.sol`` forwards ETH
through an internal call (tests of deposits that arrive through a contract);
``contracts/MockAggregator.sol`` is a Chainlink-style price (or sequencer uptime) feed,
placed by its runtime code (``devinfra.feeds``).

Compilation uses solc-js from npm (``npm ci``) and is cached in ``.local/build/``, keyed by
the source, the compiler version and the settings. Chain calls use web3.py synchronously:
this is dev and test tooling, not the daemon.
"""

import contextlib
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import requests
from eth_account import Account
from eth_typing import ABI, ChecksumAddress, HexStr
from hexbytes import HexBytes
from web3 import HTTPProvider, Web3
from web3.types import TxParams, TxReceipt, Wei

from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout, find_layout

COMPONENT: Final = "contracts"
SOURCE: Final = "contracts/TestToken.sol"
CONTRACT: Final = "TestToken"
FORWARDER_SOURCE: Final = "contracts/Forwarder.sol"
FORWARDER: Final = "Forwarder"
AGGREGATOR_SOURCE: Final = "contracts/MockAggregator.sol"
AGGREGATOR: Final = "MockAggregator"


def _settings(contract: str, runtime: bool = False) -> dict[str, Any]:
    outputs = ["abi", "evm.bytecode.object"]
    if runtime:  # only asked for where needed: the other artifacts keep their cache keys
        outputs.append("evm.deployedBytecode.object")
    return {
        "optimizer": {"enabled": True, "runs": 200},
        # Cancun is what every chain we target (and anvil) runs; newer opcodes are not needed.
        "evmVersion": "cancun",
        "outputSelection": {"*": {contract: outputs}},
    }


# Reads standard JSON on stdin and writes solc's standard JSON output on stdout.
_COMPILE_SCRIPT: Final = """
const solc = require('solc');
const chunks = [];
process.stdin.on('data', (chunk) => chunks.push(chunk));
process.stdin.on('end', () => process.stdout.write(solc.compile(Buffer.concat(chunks).toString())));
"""
_RECEIPT_TIMEOUT: Final = 60.0
# The two functions called from here; balanceOf is plain ERC-20, mint is TestToken's.
_CALLS_ABI: Final = cast(
    ABI,
    [
        {
            "type": "function",
            "name": "balanceOf",
            "stateMutability": "view",
            "inputs": [{"name": "account", "type": "address"}],
            "outputs": [{"name": "", "type": "uint256"}],
        },
        {
            "type": "function",
            "name": "mint",
            "stateMutability": "nonpayable",
            "inputs": [{"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}],
            "outputs": [],
        },
    ],
)


@dataclass(frozen=True)
class Artifact:
    """What deploying needs: the ABI and the creation bytecode (0x-prefixed hex)."""

    abi: ABI
    bytecode: HexStr
    runtime: HexStr | None = None
    """The code a deployment leaves (0x-prefixed hex), when it was asked for."""


def token_artifact(layout: Layout | None = None) -> Artifact:
    """The compiled TestToken, from the cache in ``.local/build/`` or compiled now."""
    return compiled(SOURCE, CONTRACT, layout)


def forwarder_artifact(layout: Layout | None = None) -> Artifact:
    """The compiled Forwarder (``forward(address)`` sends ``msg.value`` on by a call)."""
    return compiled(FORWARDER_SOURCE, FORWARDER, layout)


def aggregator_artifact(layout: Layout | None = None) -> Artifact:
    """The compiled MockAggregator, with its runtime code (placed with ``anvil_setCode``)."""
    return compiled(AGGREGATOR_SOURCE, AGGREGATOR, layout, runtime=True)


def compiled(
    path: str, contract: str, layout: Layout | None = None, *, runtime: bool = False
) -> Artifact:
    """``contract`` of the source file ``path`` (relative to the repository), compiled
    with the project's solc-js and cached in ``.local/build/``; ``runtime`` adds the
    code a deployment leaves."""
    layout = layout or find_layout()
    source = (layout.root / path).read_text()
    key = _cache_key(source, _solc_version(layout), contract, runtime)
    cached = layout.build / f"{contract}.json"
    if cached.exists():
        stored = json.loads(cached.read_text())
        if stored.get("key") == key:
            found = stored.get("runtime")
            return Artifact(
                cast(ABI, stored["abi"]),
                HexStr(stored["bytecode"]),
                HexStr(found) if found else None,
            )
    artifact = _compile(layout, path, contract, source, runtime)
    layout.build.mkdir(parents=True, exist_ok=True)
    record = {"key": key, "abi": artifact.abi, "bytecode": artifact.bytecode}
    if artifact.runtime is not None:
        record["runtime"] = artifact.runtime
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(cached)
    return artifact


def _solc_version(layout: Layout) -> str:
    manifest = layout.node_modules / "solc" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except FileNotFoundError:
        raise InfraError(COMPONENT, f"{manifest} is missing: run `make install`") from None


def _cache_key(source: str, solc_version: str, contract: str, runtime: bool = False) -> str:
    material = json.dumps([source, solc_version, _settings(contract, runtime)], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def _compile(layout: Layout, path: str, contract: str, source: str, runtime: bool) -> Artifact:
    node = shutil.which("node")
    if node is None:
        raise InfraError(COMPONENT, "node is not on PATH: install Node.js, then `make install`")
    request = {"language": "Solidity", "sources": {path: {"content": source}}}
    request["settings"] = _settings(contract, runtime)
    completed = subprocess.run(
        [node, "-e", _COMPILE_SCRIPT],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=layout.root,
        check=False,
        timeout=120,
    )
    if completed.returncode != 0:
        raise InfraError(COMPONENT, f"solc-js failed: {completed.stderr.strip()}")
    output = json.loads(completed.stdout)
    errors = [e for e in output.get("errors", []) if e.get("severity") == "error"]
    if errors:
        text = "; ".join(e.get("formattedMessage", e.get("message", "?")) for e in errors)
        raise InfraError(COMPONENT, f"{path} does not compile: {text}")
    found = output["contracts"][path][contract]
    deployed = found["evm"].get("deployedBytecode", {}).get("object") if runtime else None
    return Artifact(
        cast(ABI, found["abi"]),
        HexStr("0x" + found["evm"]["bytecode"]["object"]),
        HexStr("0x" + deployed) if deployed else None,
    )


@contextlib.contextmanager
def connect(url: str, timeout: float = 10.0) -> Iterator[Web3]:
    """A `Web3` on `url` whose HTTP session is closed on exit."""
    with requests.Session() as session:
        yield Web3(HTTPProvider(url, request_kwargs={"timeout": timeout}, session=session))


def _web3(rpc: Web3 | str) -> contextlib.AbstractContextManager[Web3]:
    return contextlib.nullcontext(rpc) if isinstance(rpc, Web3) else connect(rpc)


def send_transaction(w3: Web3, private_key: str, tx: TxParams) -> HexBytes:
    """Sign `tx` with `private_key` and send it; returns the transaction hash.

    Fills what `tx` leaves out: the sender's pending nonce, the chain id, EIP-1559 fees
    (twice the pending base fee plus the node's suggested tip) and the estimated gas.
    Callers sending from one key in parallel must pass their own nonces.
    """
    sender = Account.from_key(private_key).address
    tx = {**tx, "from": sender}
    if "nonce" not in tx:
        tx["nonce"] = w3.eth.get_transaction_count(sender, "pending")
    if "chainId" not in tx:
        tx["chainId"] = w3.eth.chain_id
    if "maxFeePerGas" not in tx and "gasPrice" not in tx:
        tip = w3.eth.max_priority_fee
        base_fee = w3.eth.get_block("pending").get("baseFeePerGas", 0)
        tx["maxPriorityFeePerGas"] = tip
        tx["maxFeePerGas"] = Wei(2 * base_fee + tip)
    if "gas" not in tx:
        tx["gas"] = w3.eth.estimate_gas(tx)
    signed = Account.sign_transaction(cast(dict[str, Any], tx), private_key)
    return w3.eth.send_raw_transaction(signed.raw_transaction)


def wait_for_success(w3: Web3, tx_hashes: Sequence[HexBytes]) -> list[TxReceipt]:
    """The receipts of `tx_hashes`; raises `InfraError` if one reverted or never mined."""
    receipts = [
        w3.eth.wait_for_transaction_receipt(h, timeout=_RECEIPT_TIMEOUT, poll_latency=0.05)
        for h in tx_hashes
    ]
    for receipt in receipts:
        if receipt["status"] != 1:
            raise InfraError(
                COMPONENT, f"transaction {receipt['transactionHash'].to_0x_hex()} reverted"
            )
    return receipts


def send_deploy(
    w3: Web3, deployer_key: str, name: str, symbol: str, decimals: int, *, artifact: Artifact
) -> HexBytes:
    """Send the creation transaction of a TestToken; the address is in its receipt."""
    factory = w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
    data = factory.constructor(name, symbol, decimals).data_in_transaction
    return send_transaction(w3, deployer_key, {"data": HexStr(data)})


def send_mint(
    w3: Web3, minter_key: str, token: ChecksumAddress, to: ChecksumAddress, amount: int
) -> HexBytes:
    """Send ``mint(to, amount)`` to `token` (any account may mint a TestToken)."""
    data = w3.eth.contract(address=token, abi=_CALLS_ABI).encode_abi("mint", [to, amount])
    return send_transaction(w3, minter_key, {"to": token, "data": data})


def deploy_token(
    rpc: Web3 | str,
    deployer_key: str,
    name: str,
    symbol: str,
    decimals: int,
    *,
    artifact: Artifact | None = None,
) -> ChecksumAddress:
    """Deploy a TestToken and return its checksummed address once the deployment is mined."""
    artifact = artifact or token_artifact()
    with _web3(rpc) as w3:
        tx_hash = send_deploy(w3, deployer_key, name, symbol, decimals, artifact=artifact)
        (receipt,) = wait_for_success(w3, [tx_hash])
    address = receipt["contractAddress"]
    if address is None:
        raise InfraError(COMPONENT, f"deployment {tx_hash.to_0x_hex()} created no contract")
    return address


def mint(
    rpc: Web3 | str, minter_key: str, token: ChecksumAddress, to: ChecksumAddress, amount: int
) -> None:
    """Mint `amount` base units of `token` to `to`; returns once the transaction is mined."""
    with _web3(rpc) as w3:
        wait_for_success(w3, [send_mint(w3, minter_key, token, to, amount)])


def balance_of(rpc: Web3 | str, token: ChecksumAddress, owner: ChecksumAddress) -> int:
    """``balanceOf(owner)`` of `token`, in base units, at the latest block."""
    with _web3(rpc) as w3:
        contract = w3.eth.contract(address=token, abi=_CALLS_ABI)
        balance: int = contract.functions.balanceOf(owner).call()
        return balance


def has_code(w3: Web3, address: ChecksumAddress) -> bool:
    """True if a contract is deployed at `address`."""
    return len(w3.eth.get_code(address)) > 0
