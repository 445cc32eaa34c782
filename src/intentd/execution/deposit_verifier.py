"""Confirming a prefill's deposits with a second provider before it is signed (I/O).

:meth:`DepositVerifier.unconfirmed` reads the intent's credited deposits on its source
chain (the caller's store transaction's ``work.deposits``) and, when the source token's
``verify_above`` is exceeded, asks that chain's second provider (``verify_rpc_urls``)
about each of them; the rules are in :mod:`intentd.execution.deposit_check`. It
answers the reasons the deposits are not confirmed (empty: the prefill may be signed).
A provider that fails to answer, or answers null (it lags), is a reason too: the check
fails closed.

Per block height of the deposits: the provider's head and its block at that height in
one request (so both come from one node behind a load balancer), then the receipts
the check needs and, for reconciled deposits, the address's balances at the block's
parent and at the block, all keyed by hash. A deposit the provider *contradicts*
(:attr:`~intentd.execution.deposit_check.Unconfirmed.contradicted`) is counted in
``intentd_deposits_contradicted_total{chain}`` with an error log, at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import structlog

from intentd import observability as metrics
from intentd.chain.errors import ChainUnavailable
from intentd.domain.actions import NATIVE
from intentd.execution.deposit_check import (
    Credited,
    Unconfirmed,
    check_receipt,
    check_reconciled,
    deep_enough,
    needs_check,
    reconciled_movements,
)
from intentd.execution.repositories import CreditedDeposits
from intentd.settings import ChainConfig, Settings

__all__ = ["DepositVerifier", "SecondProvider"]

log = structlog.get_logger()


class SecondProvider(Protocol):
    """What the check reads from a chain's second provider
    (``adapters.evm.second_provider.RpcSecondProvider``); a node that gives no usable
    answer raises :class:`~intentd.chain.errors.ChainUnavailable`."""

    async def view(self, tag: str, number: int, *, full: bool) -> tuple[int, dict[str, Any] | None]:
        """The number of the head block at ``tag`` and the block at height ``number``
        (None if the node has none; with its transactions in full when ``full``),
        answered together by one node."""
        ...

    async def receipts(self, tx_hashes: Sequence[str]) -> list[dict[str, Any] | None]:
        """The receipt of each transaction, in order (None: the node has none)."""
        ...

    async def balances(self, address: str, block_hashes: Sequence[str]) -> list[int]:
        """The native balance of ``address`` at each block hash, in order."""
        ...

    async def close(self) -> None: ...


class DepositVerifier:
    """Confirms prefills' deposits on their source chains' second providers."""

    def __init__(self, settings: Settings, providers: Mapping[str, SecondProvider]) -> None:
        self._settings = settings
        self._providers = dict(providers)

    @classmethod
    def from_settings(
        cls, settings: Settings, provider: Callable[[ChainConfig], SecondProvider]
    ) -> DepositVerifier | None:
        """The verifier of ``settings``, or None when no token sets ``verify_above``;
        ``provider`` opens the second provider of a chain with ``verify_rpc_urls``."""
        if not any(
            token.verify_above is not None
            for chain in settings.chains.values()
            for token in (chain.native, *chain.tokens)
        ):
            return None
        return cls(
            settings,
            {
                name: provider(chain)
                for name, chain in settings.chains.items()
                if chain.verify_rpc_urls
            },
        )

    async def close(self) -> None:
        for provider in self._providers.values():
            await provider.close()

    async def unconfirmed(self, deposits: CreditedDeposits, intent_id: int) -> list[str]:
        """Why the intent's credited deposits do not allow its prefill yet ([]: they do)."""
        source = await deposits.intent_source(intent_id)
        if source is None:
            return [f"intent {intent_id} not found"]
        source_chain, token_in = source
        chain = self._settings.chains.get(source_chain)
        token = None if chain is None else chain.token(token_in)
        if chain is None or token is None:
            return [f"source {source_chain} {token_in} is not configured"]
        credited = await deposits.credited(intent_id, chain.name)
        if not needs_check(credited, token.verify_above_units):
            return []
        provider = self._providers.get(chain.name)
        if provider is None:  # settings refuse this; never pay unconfirmed
            return [f"chains.{chain.name}.verify_rpc_urls is not configured"]
        try:
            return await confirm(credited, provider, chain)
        except (ChainUnavailable, KeyError, ValueError, TypeError, AttributeError) as exc:
            # an error, or an answer of the wrong shape: the prefill waits
            return [f"second provider of {chain.name} did not answer: {exc!r}"]


async def confirm(
    deposits: Sequence[Credited], provider: SecondProvider, chain: ChainConfig
) -> list[str]:
    """The reasons ``provider`` does not confirm ``deposits`` (one per deposit)."""
    refused: dict[Credited, Unconfirmed] = {}
    for number in sorted({d.block_number for d in deposits}):
        at = [d for d in deposits if d.block_number == number]
        refused.update(await _confirm_block(number, at, provider, chain))
    reasons = []
    for deposit in deposits:
        found = refused.get(deposit)
        if found is None:
            continue
        if found.contradicted:
            metrics.DEPOSITS_CONTRADICTED.labels(chain.name).inc()
            log.error(
                "the second provider contradicts a credited deposit: the provider that"
                " reported it lied or is broken; the prefill stays unsent; operator action"
                " needed",
                chain=chain.name,
                tx_hash=deposit.tx_hash,
                to_address=deposit.to_address,
                amount=str(deposit.amount),
                block_number=deposit.block_number,
                reason=found.reason,
            )
        reasons.append(f"{deposit.tx_hash}: {found.reason}")
    return reasons


async def _confirm_block(
    number: int, deposits: Sequence[Credited], provider: SecondProvider, chain: ChainConfig
) -> dict[Credited, Unconfirmed]:
    """What ``provider`` does not confirm of ``deposits`` (all recorded at height ``number``)."""
    full = any(d.token == NATIVE for d in deposits)
    head, block = await provider.view(chain.head, number, full=full)
    found = None if block is None else str(block["hash"]).lower()
    refused = {
        d: Unconfirmed(why)
        for d in deposits
        if (why := _misplaced(d, head, found, chain.confirmations)) is not None
    }
    rest = [d for d in deposits if d not in refused]
    if block is None or found is None or not rest:
        return refused
    claims: dict[str, list[Credited]] = {}
    for deposit in rest:
        if deposit.reconciled:
            claims.setdefault(deposit.to_address, []).append(deposit)
    wanted = {d.tx_hash for d in rest if not d.reconciled}
    for address in claims:
        wanted.update(reconciled_movements(address, block))
    hashes = sorted(wanted)
    receipts = dict(zip(hashes, await provider.receipts(hashes), strict=True))
    txs = {str(t["hash"]).lower(): t for t in block["transactions"] if isinstance(t, dict)}
    for deposit in rest:
        if not deposit.reconciled:
            unconfirmed = _by_receipt(deposit, receipts[deposit.tx_hash], txs, found)
            if unconfirmed is not None:
                refused[deposit] = unconfirmed
    for address, of_address in claims.items():
        before, after = await provider.balances(address, [str(block["parentHash"]).lower(), found])
        unconfirmed = check_reconciled(of_address, block, receipts, before, after)
        if unconfirmed is not None:
            refused.update(dict.fromkeys(of_address, unconfirmed))
    return refused


def _misplaced(deposit: Credited, head: int, found: str | None, confirmations: int) -> str | None:
    """Why the provider's block at the deposit's height (hash ``found``, None: it has
    none) and its ``head`` do not hold the deposit's block deep enough, or None."""
    number = deposit.block_number
    if not deep_enough(deposit, head, confirmations):
        return f"block {number} not {confirmations} deep at {head}"
    if found is None:
        return f"no block at {number}"
    if found != deposit.block_hash:
        return f"block {number} is {found}, not {deposit.block_hash}"
    return None


def _by_receipt(
    deposit: Credited,
    receipt: dict[str, Any] | None,
    txs: Mapping[str, Mapping[str, Any]],
    block_hash: str,
) -> Unconfirmed | None:
    """Why a transaction deposit is not confirmed by its receipt (and, native, by the
    transaction in the block), or None. Contradicted when both are there and disagree."""
    why_not = check_receipt(deposit, receipt, txs.get(deposit.tx_hash))
    if why_not is None:
        return None
    in_block = receipt is not None and str(receipt.get("blockHash", "")).lower() == block_hash
    seen = deposit.token != NATIVE or deposit.tx_hash in txs
    return Unconfirmed(why_not, contradicted=in_block and seen)
