"""Confirming a prefill's deposits with a second provider before it is signed (I/O).

:meth:`DepositVerifier.unconfirmed` reads the intent's credited deposits on its source
chain (through the caller's store transaction) and, when the source token's ``verify_above`` is
exceeded, asks that chain's second provider (``verify_rpc_urls``) about each of them;
the rules are in :mod:`intentd.execution.deposit_check`. It answers the reasons the
deposits are not confirmed (empty: the prefill may be signed). A provider that fails
to answer is a reason too: the check fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from intentd.domain.actions import NATIVE
from intentd.execution.deposit_check import (
    Credited,
    check_balance,
    check_receipt,
    deep_enough,
    needs_check,
)
from intentd.execution.ports import StoreTransaction
from intentd.indexer.balances import reconciled_tx_hash
from intentd.indexer.ports import ChainUnavailable
from intentd.settings import ChainConfig, Settings

__all__ = ["DepositVerifier", "SecondProvider"]


class SecondProvider(Protocol):
    """What the check reads from a chain's second provider
    (``adapters.second_provider.RpcSecondProvider``); a node that gives no usable
    answer raises :class:`~intentd.indexer.ports.ChainUnavailable`."""

    async def head(self, tag: str) -> int: ...
    async def block_hash(self, number: int) -> str | None: ...
    async def parent_hash(self, block_hash: str) -> str | None: ...
    async def receipt(self, tx_hash: str) -> dict[str, Any] | None: ...
    async def transaction(self, tx_hash: str) -> dict[str, Any] | None: ...
    async def balance(self, address: str, block_hash: str) -> int: ...
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

    async def unconfirmed(self, work: StoreTransaction, intent_id: int) -> list[str]:
        """Why the intent's credited deposits do not allow its prefill yet ([]: they do)."""
        source = await work.intent_source(intent_id)
        if source is None:
            return [f"intent {intent_id} not found"]
        source_chain, token_in = source
        chain = self._settings.chains.get(source_chain)
        token = None if chain is None else chain.token(token_in)
        if chain is None or token is None:
            return [f"source {source_chain} {token_in} is not configured"]
        deposits = await work.credited_deposits(intent_id, chain.name)
        if not needs_check(deposits, token.verify_above_units):
            return []
        provider = self._providers.get(chain.name)
        if provider is None:  # settings refuse this; never pay unconfirmed
            return [f"chains.{chain.name}.verify_rpc_urls is not configured"]
        try:
            return await confirm(deposits, provider, chain)
        except (ChainUnavailable, KeyError, ValueError) as exc:
            return [f"second provider of {chain.name} did not answer: {exc}"]


async def confirm(
    deposits: list[Credited], provider: SecondProvider, chain: ChainConfig
) -> list[str]:
    """The reasons ``provider`` does not confirm ``deposits`` (one per deposit)."""
    head = await provider.head(chain.head)
    reasons = []
    for deposit in deposits:
        reason = await _confirm_one(deposit, provider, head, chain.confirmations)
        if reason is not None:
            reasons.append(f"{deposit.tx_hash}: {reason}")
    return reasons


async def _confirm_one(
    deposit: Credited, provider: SecondProvider, head: int, confirmations: int
) -> str | None:
    if not deep_enough(deposit, head, confirmations):
        return f"block {deposit.block_number} not {confirmations} deep at {head}"
    found = await provider.block_hash(deposit.block_number)
    if found != deposit.block_hash:
        return f"block {deposit.block_number} is {found}, not {deposit.block_hash}"
    if deposit.tx_hash == reconciled_tx_hash(deposit.to_address, deposit.block_hash):
        parent = await provider.parent_hash(deposit.block_hash)
        if parent is None:
            return "no parent block"
        before = await provider.balance(deposit.to_address, parent)
        after = await provider.balance(deposit.to_address, deposit.block_hash)
        return check_balance(deposit, before, after)
    receipt = await provider.receipt(deposit.tx_hash)
    tx = await provider.transaction(deposit.tx_hash) if deposit.token == NATIVE else None
    return check_receipt(deposit, receipt, tx)
