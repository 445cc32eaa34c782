"""A small async driver of a local anvil: unlocked-account transactions, mining, snapshots.

Used by the poller's benchmarks, its integration tests and the recorder of the RPC
fixtures. anvil's default accounts are unlocked, so transactions go out with
``eth_sendTransaction`` (no signing) and many can be sent in one JSON-RPC batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import aiohttp
import orjson
from eth_abi.abi import encode as abi_encode

from intentd_dev.devinfra.contracts import token_artifact

MINT = "0x40c10f19"  # mint(address,uint256)
# A "disperse" contract, assembled by hand: calldata is a token address word followed by
# recipient words; it calls token.mint(recipient, 1) for each and reverts if one fails.
# So one transaction makes many genuine ERC-20 Transfer logs of the token (a payout batch).
_DISPERSE_RUNTIME = (
    "6340c10f1960e01b600052"  # mem[0:32] = mint selector << 224
    "6001602452"  # mem[36:68] = amount 1
    "6020"  # i = 32
    "5b"  # 0x12 loop:
    "8036111560385780"  # if calldatasize <= i: goto end
    "35600452"  # mem[4:36] = calldata[i]
    "60006000604460006000"  # retSize, retOffset, argsSize 68, argsOffset, value
    "6000355af1"  # CALL(gas, token = calldata[0], ...)
    "15603a57"  # if the call failed: goto fail
    "6020016012565b00"  # i += 32; goto loop; 0x38 end: STOP
    "5b60006000fd"  # 0x3a fail: REVERT(0, 0)
)
DISPERSE_INITCODE = "0x604080600b6000396000f3" + _DISPERSE_RUNTIME
TRANSFER = "0xa9059cbb"  # transfer(address,uint256)


def call_data(selector: str, to: str, amount: int) -> str:
    """Calldata of ``selector(address to, uint256 amount)``."""
    return selector + abi_encode(["address", "uint256"], [to, amount]).hex()


class DevChain:
    """JSON-RPC to one anvil; use as ``async with DevChain(url) as chain``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        self._session = aiohttp.ClientSession(headers={"Content-Type": "application/json"})
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()

    async def batch(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """Results of ``calls`` in order; raises on any JSON-RPC error."""
        assert self._session is not None, "use DevChain as an async context manager"
        body = [
            {"jsonrpc": "2.0", "id": i, "method": method, "params": list(params)}
            for i, (method, params) in enumerate(calls)
        ]
        async with self._session.post(self.url, data=orjson.dumps(body)) as response:
            answer = orjson.loads(await response.read())
        by_id = {item["id"]: item for item in answer}
        results = []
        for i, (method, _) in enumerate(calls):
            item = by_id[i]
            if "error" in item:
                raise RuntimeError(f"{method}: {item['error']}")
            results.append(item["result"])
        return results

    async def rpc(self, method: str, *params: Any) -> Any:
        [result] = await self.batch([(method, params)])
        return result

    async def accounts(self) -> list[str]:
        accounts: list[str] = await self.rpc("eth_accounts")
        return accounts

    async def block_number(self) -> int:
        return int(await self.rpc("eth_blockNumber"), 16)

    async def mine(self, blocks: int = 1) -> None:
        await self.rpc("anvil_mine", hex(blocks))

    async def automine(self, enabled: bool) -> None:
        await self.rpc("evm_setAutomine", enabled)

    async def snapshot(self) -> str:
        snapshot: str = await self.rpc("evm_snapshot")
        return snapshot

    async def revert(self, snapshot: str) -> None:
        assert await self.rpc("evm_revert", snapshot), f"snapshot {snapshot} not reverted"

    async def send(self, sender: str, to: str | None, *, value: int = 0, data: str = "0x") -> str:
        """Send a transaction from an unlocked account; return its hash."""
        [tx_hash] = await self.send_many([_tx(sender, to, value, data)])
        return tx_hash

    async def send_many(self, txs: Sequence[dict[str, Any]]) -> list[str]:
        """Send prepared transactions (see :func:`tx`) in one batch; return their hashes."""
        return await self.batch([("eth_sendTransaction", [tx]) for tx in txs])

    async def receipt(self, tx_hash: str) -> dict[str, Any]:
        for _ in range(200):
            receipt = await self.rpc("eth_getTransactionReceipt", tx_hash)
            if receipt is not None:
                if receipt["status"] != "0x1":
                    raise RuntimeError(f"transaction {tx_hash} reverted")
                return dict(receipt)
            await asyncio.sleep(0.05)
        raise TimeoutError(f"transaction {tx_hash} not mined")

    async def deploy_disperse(self, sender: str) -> str:
        """Deploy the disperse contract (see ``DISPERSE_INITCODE``); return its address."""
        receipt = await self.receipt(await self.send(sender, None, data=DISPERSE_INITCODE))
        return str(receipt["contractAddress"]).lower()

    async def deploy_token(self, sender: str, name: str, symbol: str, decimals: int) -> str:
        """Deploy a TestToken (public ``mint``); return its lowercase address once mined."""
        args = abi_encode(["string", "string", "uint8"], [name, symbol, decimals]).hex()
        tx_hash = await self.send(sender, None, data=token_artifact().bytecode + args)
        receipt = await self.receipt(tx_hash)
        return str(receipt["contractAddress"]).lower()


def disperse_data(token: str, recipients: Sequence[str]) -> str:
    """Calldata of the disperse contract: mint 1 unit of ``token`` to each recipient."""
    return "0x" + abi_encode(["address"] * (1 + len(recipients)), [token, *recipients]).hex()


def tx(
    sender: str, to: str | None, value: int = 0, data: str = "0x", gas: int = 200_000
) -> dict[str, Any]:
    """A transaction for :meth:`DevChain.send_many` (fixed gas: no estimate round trip)."""
    return _tx(sender, to, value, data, gas)


def _tx(
    sender: str, to: str | None, value: int, data: str, gas: int | None = None
) -> dict[str, Any]:
    fields: dict[str, Any] = {"from": sender, "value": hex(value), "data": data}
    if to is not None:
        fields["to"] = to
    if gas is not None:
        fields["gas"] = hex(gas)
    return fields
