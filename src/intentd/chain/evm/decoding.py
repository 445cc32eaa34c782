"""Deposits found in JSON-RPC answers: native transfers in full blocks, ERC-20 ``Transfer`` logs.

Pure functions over the decoded JSON of ``eth_getBlockByNumber(n, true)`` and
``eth_getLogs``. They are on the hot path of a backfill, so they read the raw hex
themselves instead of going through web3's decoders, and they look an address up in
the watched set before decoding anything else about a transfer.

What counts as a deposit:

- a transaction whose ``to`` is watched and whose ``value`` is above zero (contract
  creations have no ``to`` and never count) is only a *candidate*
  (:class:`NativeCandidate`): it counts once its receipt says it succeeded, and only
  for the transaction types whose value really goes to ``to`` (``chain.evm.tx_types``);
- a ``Transfer(address,address,uint256)`` log emitted by one of the chain's
  configured tokens (anyone can emit a look-alike from another contract), with the
  recipient watched and an amount above zero. Logs exist only for successful
  transactions.

A deposit's identity is ``(tx_hash, token, transfer_index)``, the same on every fork
(see :attr:`ChainTransfer.key`): ``transfer_index`` is -1 for the native coin and, for a
token, the position of the log among the ``Transfer`` logs *of that token contract*
in its transaction. ``eth_getLogs`` returns every such log of a configured token
(the filter is the token's address and topic 0), whatever its recipient, so the
position does not depend on the watched set; and it does not depend on the block,
unlike the block-wide ``logIndex`` (kept as ``log_index``, where it was seen).

An answer that contradicts itself (a log whose block hash is not the hash of the
block fetched at that height, a missing or extra block) raises
:class:`InconsistentAnswer`: the node answered from two different forks and the
range must be read again. Nothing is ever silently skipped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.transfers import ChainTransfer, chain_order
from intentd.messages import NATIVE_LOG_INDEX
from intentd.settings import NATIVE_TOKEN

__all__ = [
    "NATIVE",
    "TRANSFER_TOPIC",
    "Found",
    "NativeCandidate",
    "decode_headers",
    "find_deposits",
    "native_candidates",
    "token_deposits",
]

TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
"""keccak256("Transfer(address,address,uint256)"), topic 0 of an ERC-20 transfer."""
NATIVE = NATIVE_TOKEN.lower()
_TRANSFER_TOPICS = 3  # topic0, from, to; ERC-721 indexes the token id as a fourth
_WORD_HEX = 66  # "0x" + 32 bytes of hex


class NativeCandidate(NamedTuple):
    """A transaction carrying value to a watched address; it counts only with its receipt."""

    deposit: ChainTransfer
    tx_type: int


class Found(NamedTuple):
    """What a range holds: its headers, token deposits, and native candidates."""

    headers: list[BlockHeader]
    deposits: list[ChainTransfer]
    """Token deposits in chain order (block, transaction, log)."""
    natives: list[NativeCandidate]
    """To be settled with their receipts (``chain.evm.tx_types.settle_natives``)."""


def decode_headers(
    blocks: Sequence[Mapping[str, Any]], blocks_range: BlockRange
) -> list[BlockHeader]:
    """Headers of ``blocks``, which must be exactly the blocks of ``blocks_range`` in order."""
    if len(blocks) != len(blocks_range):
        raise InconsistentAnswer(f"asked for blocks {blocks_range}, got {len(blocks)} blocks")
    headers = []
    for expected, block in zip(blocks_range, blocks, strict=True):
        number = int(block["number"], 16)
        if number != expected:
            raise InconsistentAnswer(f"asked for block {expected}, got block {number}")
        headers.append(
            BlockHeader(
                number=number,
                hash=block["hash"].lower(),
                parent_hash=block["parentHash"].lower(),
                timestamp=int(block["timestamp"], 16),
            )
        )
    return headers


def native_candidates(
    block: Mapping[str, Any], header: BlockHeader, watched: WatchedAddresses
) -> list[NativeCandidate]:
    """Transactions of the block carrying value to watched addresses (not yet deposits)."""
    transactions = block["transactions"]
    if transactions and not isinstance(transactions[0], Mapping):
        raise InconsistentAnswer(f"block {header.number} came without full transactions")
    found = []
    for tx in transactions:
        to = tx.get("to")
        if to is None or not watched.contains_hex(to):
            continue
        amount = int(tx["value"], 16)
        if amount == 0:
            continue
        deposit = ChainTransfer(
            block_number=header.number,
            block_hash=header.hash,
            block_time=header.timestamp,
            tx_hash=tx["hash"].lower(),
            tx_index=int(tx["transactionIndex"], 16),
            log_index=NATIVE_LOG_INDEX,
            token=NATIVE,
            from_address=tx["from"].lower(),
            to_address=to.lower(),
            amount=amount,
            transfer_index=NATIVE_LOG_INDEX,
        )
        found.append(NativeCandidate(deposit, int(tx.get("type") or "0x0", 16)))
    return found


def token_deposits(
    logs: Sequence[Mapping[str, Any]],
    headers: Mapping[int, BlockHeader],
    tokens: Collection[str],
    watched: WatchedAddresses,
) -> list[ChainTransfer]:
    """ERC-20 transfers to watched addresses among ``logs``.

    ``tokens`` are the configured token addresses in lower case; ``headers`` are the
    blocks the logs were read for, by number.
    """
    found = []
    contains = watched.contains_hex
    # Position of each log among its transaction's Transfer logs of the same contract.
    # Nodes answer in block and log order, so a transaction's logs come together; a
    # transaction seen again after another one, or matched logs out of log order, make
    # the answer inconsistent (positions would be wrong).
    tx_hash: str | None = None
    counts: dict[str, int] = {}
    finished: set[str] = set()
    last_index = -1
    for log in logs:
        topics = log["topics"]
        if not topics or topics[0] != TRANSFER_TOPIC:
            continue
        this_tx = log["transactionHash"]
        if this_tx != tx_hash:
            if this_tx in finished:
                raise InconsistentAnswer(f"logs of transaction {this_tx} are not together")
            if tx_hash is not None:
                finished.add(tx_hash)
            tx_hash, counts, last_index = this_tx, {}, -1
        address = log["address"]
        position = counts.get(address, 0)
        counts[address] = position + 1
        if len(topics) != _TRANSFER_TOPICS or not contains(topics[2]):
            continue
        number = int(log["blockNumber"], 16)
        header = headers.get(number)
        if header is None:
            raise InconsistentAnswer(f"log of block {number}, outside the range read")
        block_hash = log["blockHash"]
        if (block_hash != header.hash and block_hash.lower() != header.hash) or log.get("removed"):
            raise InconsistentAnswer(f"log of block {number} is from another fork")
        token = address.lower()
        data = log["data"]
        if token not in tokens or len(data) != _WORD_HEX:
            continue
        amount = int(data, 16)
        if amount == 0:
            continue
        log_index = int(log["logIndex"], 16)
        if log_index <= last_index:
            raise InconsistentAnswer(f"logs of transaction {this_tx} are not in log order")
        last_index = log_index
        found.append(
            ChainTransfer(
                number,
                header.hash,
                header.timestamp,
                this_tx.lower(),
                int(log["transactionIndex"], 16),
                log_index,
                token,
                "0x" + topics[1][-40:].lower(),
                "0x" + topics[2][-40:].lower(),
                amount,
                position,
            )
        )
    return found


def find_deposits(
    blocks: Sequence[Mapping[str, Any]],
    logs: Sequence[Mapping[str, Any]],
    blocks_range: BlockRange,
    tokens: Collection[str],
    watched: WatchedAddresses,
    *,
    headers: list[BlockHeader] | None = None,
) -> Found:
    """Headers of the range, its token deposits and its native candidates
    (``headers``: the blocks' headers if the caller decoded them already)."""
    if headers is None:
        headers = decode_headers(blocks, blocks_range)
    natives: list[NativeCandidate] = []
    for block, header in zip(blocks, headers, strict=True):
        if block["transactions"]:
            natives.extend(native_candidates(block, header, watched))
    deposits: list[ChainTransfer] = []
    if logs:
        by_number = {header.number: header for header in headers}
        deposits = token_deposits(logs, by_number, tokens, watched)
        deposits.sort(key=chain_order)
    return Found(headers, deposits, natives)
