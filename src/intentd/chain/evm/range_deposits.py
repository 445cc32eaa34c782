"""The deposits of a block range as read: prove the logs whole, decode, settle native
candidates by receipt, reconcile native balances.

:func:`scan_range` is the one path from a :class:`~intentd.chain.evm.ports.RawRange` to
deposits, used by the poller, by trigger-processing, its verifier, ``intents rescan``
and the lifecycle's gap recovery alike. The range's log answers must be proven against
its blocks (``chain.evm.coverage``: each answering node's block at the anchor is the
block read there; every log of a block read, at that block's hash). Token
deposits need no receipt (logs exist only for successful transactions); a native
candidate (value to a watched address) counts only with a successful receipt and a
type that pays its ``to`` (``chain.evm.tx_types``). Receipts are fetched in one batch
for those candidates only, so a range without any costs no extra call. With a
balance reconciliation (``chain.evm.reconciliation``), the native coin that reached a
reconciled address through a contract is found too, when ``reconcile_if`` accepts the
headers (the poller reconciles only a batch that extends its cursor).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import structlog

from intentd import observability as metrics
from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.balances import Reconciled
from intentd.chain.evm.coverage import proven_logs
from intentd.chain.evm.decoding import decode_headers, find_deposits
from intentd.chain.evm.ports import RangeReader, RawRange
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.evm.tx_types import needs_receipt, settle_natives
from intentd.chain.transfers import ChainTransfer, chain_order

__all__ = ["scan_range"]

log = structlog.get_logger()


async def scan_range(
    chain: str,
    reader: RangeReader,
    raw: RawRange,
    blocks: BlockRange,
    *,
    tokens: Collection[str],
    watched: WatchedAddresses,
    reconciliation: Reconciliation | None = None,
    reconciled: Sequence[Reconciled] | None = None,
    reconcile_if: Callable[[list[BlockHeader]], bool] | None = None,
) -> tuple[list[BlockHeader], list[ChainTransfer]]:
    """Headers of ``blocks`` and their deposits in chain order (block, transaction, log).

    ``reconciliation``: also the deposits it finds (at ``reconciled``, by default its
    own addresses), if ``reconcile_if`` (default: always) accepts the headers.
    Raises ``InconsistentAnswer`` when the answers (blocks, logs, receipts) do not fit
    together or a log answer is not proven (``coverage.UnprovenLogs``); the caller reads
    the range again.
    """
    headers, deposits = await _decoded(chain, reader, raw, blocks, tokens=tokens, watched=watched)
    if reconciliation is None or (reconcile_if is not None and not reconcile_if(headers)):
        return headers, deposits
    deposits.extend(await reconciliation.find(headers, raw.blocks, reconciled))
    deposits.sort(key=lambda d: (d.block_number, d.tx_index, d.log_index))
    return headers, deposits


async def _decoded(
    chain: str,
    reader: RangeReader,
    raw: RawRange,
    blocks: BlockRange,
    *,
    tokens: Collection[str],
    watched: WatchedAddresses,
) -> tuple[list[BlockHeader], list[ChainTransfer]]:
    """Decoded deposits, natives settled by their receipts."""
    headers = decode_headers(raw.blocks, blocks)
    logs = proven_logs(raw.answers, {h.number: h.hash for h in headers})
    found = find_deposits(raw.blocks, logs, blocks, tokens, watched, headers=headers)
    if not found.natives:
        return found.headers, found.deposits
    hashes = [c.deposit.tx_hash for c in found.natives if needs_receipt(c)]
    receipts = await reader.receipts(hashes) if hashes else {}
    natives, refused = settle_natives(found.natives, receipts)
    for candidate in refused:
        metrics.NATIVE_REFUSED.labels(chain, hex(candidate.tx_type)).inc()
        log.warning(
            "value to a watched address not credited (failed, or a type that does not pay its to)",
            tx_hash=candidate.deposit.tx_hash,
            tx_type=hex(candidate.tx_type),
            to_address=candidate.deposit.to_address,
            amount=str(candidate.deposit.amount),
            block_number=candidate.deposit.block_number,
        )
    if not natives:
        return found.headers, found.deposits
    return found.headers, sorted(found.deposits + natives, key=chain_order)
