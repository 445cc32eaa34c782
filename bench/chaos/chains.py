"""The chaos run's own two anvil chains: start, provision, pay, reorganise, read.

Never the shared dev chains: ``anvil_reorg`` would break every other test. Each chain is
an anvil of its own (a block every ``block_time`` seconds) with the chain id of the test
network it stands for, the two test tokens deployed by anvil's account 0 (so at the
addresses ``make infra-up`` gets), the relayer's ``tokenOut`` minted, and payers funded.

A reorg (:meth:`Chain.reorg`) pauses block production, mines what waits in the pool
(``anvil_reorg`` would drop it), replaces the newest ``depth`` blocks with
``anvil_reorg`` and re-includes every transaction they held, each in the block of the
same offset and the same order (so nonces stay valid and no payment or transfer of
intentd is lost; the new blocks have other hashes), then resumes.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_typing import HexStr
from eth_utils import to_checksum_address

from intentd_dev.devchain import MINT, TRANSFER, DevChain, call_data, tx
from intentd_dev.devinfra import feeds
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil
from intentd_dev.devinfra.contracts import aggregator_artifact, connect

ETH = 10**18
TOKEN_FUNDS = 10**15  # base units of each test token minted to each payer and the relayer


@dataclass
class Chain:
    """One anvil of the run, its tokens and a JSON-RPC client."""

    name: str
    chain_id: int
    anvil: AnvilProcess
    rpc: DevChain
    block_time: int
    tokens: dict[str, str] = field(default_factory=dict)  # symbol -> lowercase address
    nonces: dict[str, int] = field(default_factory=dict)
    raw: dict[tuple[str, int], str] = field(default_factory=dict)  # (payer, nonce) -> tx
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def url(self) -> str:
        return self.anvil.url

    async def provision(self, payers: list[LocalAccount], relayer: str) -> None:
        """Deploy USDC and USDT, mint to the relayer and the payers, give payers ether."""
        deployer = dev_account(Role.DEPLOYER).address
        await self.rpc.automine(True)
        for symbol, name in (("USDC", "Test USD Coin"), ("USDT", "Test Tether USD")):
            self.tokens[symbol] = await self.rpc.deploy_token(deployer, name, symbol, 6)
        holders = [relayer, *(p.address for p in payers)]
        mints = [
            tx(deployer, token, data=call_data(MINT, holder, TOKEN_FUNDS))
            for token in self.tokens.values()
            for holder in holders
        ]
        for mint in mints:  # one by one: anvil may race nonces within a batch
            await self.rpc.receipt((await self.rpc.send_many([mint]))[0])
        for payer in payers:
            await self.rpc.rpc("anvil_setBalance", payer.address, hex(1000 * ETH))
        await self.rpc.automine(False)
        await self.rpc.rpc("evm_setIntervalMining", self.block_time)

    async def pay(self, payer: LocalAccount, token: str | None, to: str, amount: int) -> str:
        """A signed ERC-20 ``transfer`` of ``amount`` from ``payer`` (``token`` None: a
        plain ETH transfer of ``amount`` wei to ``to``); its hash."""
        if token is None:
            payment: dict[str, Any] = {"to": to_checksum_address(to), "value": amount}
            payment["gas"] = 21_000
        else:
            payment = {
                "to": to_checksum_address(token),
                "data": HexStr(call_data(TRANSFER, to, amount)),
                "gas": 100_000,
            }
        async with self.lock:  # nonces in order, and never during a reorg
            nonce = self.nonces.get(payer.address)
            if nonce is None:
                nonce = int(
                    await self.rpc.rpc("eth_getTransactionCount", payer.address, "latest"), 16
                )
            signed = payer.sign_transaction(
                {
                    **payment,
                    "nonce": nonce,
                    "chainId": self.chain_id,
                    "maxFeePerGas": 100 * 10**9,
                    "maxPriorityFeePerGas": 10**9,
                }
            )
            raw = "0x" + signed.raw_transaction.hex()
            tx_hash: str = await self.rpc.rpc("eth_sendRawTransaction", raw)
            self.raw[(payer.address, nonce)] = raw
            self.nonces[payer.address] = nonce + 1
            return tx_hash

    async def rebroadcast(self) -> int:
        """Send again every payment above a payer's mined nonce that the node forgot (as
        a wallet does); the number sent again. Seen once: after many reorgs a payer's
        transaction was gone from anvil's pool and all its later ones waited behind
        the nonce gap."""
        again = 0
        async with self.lock:
            for payer, next_nonce in self.nonces.items():
                mined = int(await self.rpc.rpc("eth_getTransactionCount", payer, "latest"), 16)
                for nonce in range(mined, next_nonce):
                    try:
                        await self.rpc.rpc("eth_sendRawTransaction", self.raw[(payer, nonce)])
                        again += 1
                    except RuntimeError:
                        pass  # known to the node already
        return again

    async def reorg(self, depth: int) -> int:
        """Replace the newest ``depth`` blocks, re-including their transactions; the
        number of transactions re-included."""
        async with self.lock:
            await self.rpc.rpc("evm_setIntervalMining", 0)
            try:
                # anvil_reorg drops what waits in the pool: mine it first, so that a
                # payment is never lost (nor every later one of its payer stuck behind
                # the nonce gap); the transactions of intentd's executors sent during the
                # reorg may still be dropped, as a node may forget any
                for _ in range(10):
                    status = await self.rpc.rpc("txpool_status")
                    if int(status["pending"], 16) == 0:
                        break
                    await self.rpc.mine(1)
                head = await self.rpc.block_number()
                depth = min(depth, head - 1)
                plan: list[list[Any]] = []
                for offset, number in enumerate(range(head - depth + 1, head + 1)):
                    block = await self.rpc.rpc("eth_getBlockByNumber", hex(number), False)
                    for tx_hash in block["transactions"]:
                        raw = await self.rpc.rpc("eth_getRawTransactionByHash", tx_hash)
                        plan.append([raw, offset])
                await self.rpc.rpc("anvil_reorg", depth, plan)
                # a reorg sets anvil's clock back (the new blocks are stamped seconds
                # earlier than those they replace); the blocks after it follow the wall
                # clock again, else the chain's time would fall behind at every reorg
                await self.rpc.rpc("evm_setTime", int(time.time()))
            finally:
                await self.rpc.rpc("evm_setIntervalMining", self.block_time)
            return len(plan)

    async def place_feeds(self, eth_usd: Decimal) -> None:
        """The dev stack's mock price feeds at their fixed addresses
        (``intentd_dev.devinfra.feeds``), ETH / USD at ``eth_usd``."""

        def place() -> None:
            with connect(self.url) as w3:
                feeds.ensure_feeds(w3, aggregator_artifact())
                feeds.set_price(w3, feeds.feed_address("ETH"), eth_usd)

        await asyncio.to_thread(place)

    async def set_eth_price(self, usd: Decimal) -> None:
        """A new round of the ETH / USD feed (mined on return), never during a reorg."""

        def publish() -> None:
            with connect(self.url) as w3:
                feeds.set_price(w3, feeds.feed_address("ETH"), usd)

        async with self.lock:
            await asyncio.to_thread(publish)

    async def busy(self, depth: int) -> bool:
        """Whether the newest ``depth`` blocks hold a transaction (a reorg there moves some)."""
        head = await self.rpc.block_number()
        for number in range(max(head - depth + 1, 1), head + 1):
            block = await self.rpc.rpc("eth_getBlockByNumber", hex(number), False)
            if block["transactions"]:
                return True
        return False

    async def native(self, address: str) -> int:
        return int(await self.rpc.rpc("eth_getBalance", address, "latest"), 16)

    async def token_balance(self, token: str, owner: str) -> int:
        data = "0x70a08231" + owner[2:].lower().rjust(64, "0")
        return int(
            await self.rpc.rpc(
                "eth_call", {"to": to_checksum_address(token), "data": data}, "latest"
            ),
            16,
        )

    async def stop(self) -> None:
        await self.rpc.__aexit__(None, None, None)
        await asyncio.to_thread(self.anvil.stop)


async def start_chain(name: str, chain_id: int, block_time: int) -> Chain:
    anvil = await asyncio.to_thread(start_anvil, chain_id, None, None)
    rpc = await DevChain(anvil.url).__aenter__()
    return Chain(name, chain_id, anvil, rpc, block_time)


def payer_accounts(seed: int, count: int) -> list[LocalAccount]:
    """Payers of the run, derived from the seed (test keys of a throwaway chain)."""
    rng = random.Random(seed)
    return [Account.from_key(rng.randbytes(32)) for _ in range(count)]
