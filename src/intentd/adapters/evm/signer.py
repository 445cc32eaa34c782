"""The executor's keys and EIP-1559 signing (eth_account).

:class:`Keyring` holds the relayer and gas-tank keys and derives intent keys from
the HD seed; it never shows a key in a ``repr``, a log or an error. Signing is
offline: the signed bytes and their hash are recorded before anything is broadcast.
"""

from __future__ import annotations

from typing import Any

from eth_account import Account
from eth_utils import to_checksum_address

from intentd.custody import IntentKeys, address_of_key
from intentd.domain.actions import SignerKind
from intentd.execution.ports import SignedTx
from intentd.execution.tx_plans import TxPlan
from intentd.settings import ChainConfig, ConfigError, Settings

__all__ = ["Keyring", "sign"]


def sign(plan: TxPlan, *, chain_id: int, nonce: int, private_key: bytes) -> SignedTx:
    """Sign ``plan`` as an EIP-1559 (type 2) transaction."""
    fields: dict[str, Any] = {
        "type": 2,
        "chainId": chain_id,
        "nonce": nonce,
        "to": to_checksum_address(plan.to),
        "value": plan.value,
        "data": plan.data,
        "gas": plan.gas_limit,
        "maxFeePerGas": plan.fees.max_fee_per_gas,
        "maxPriorityFeePerGas": plan.fees.max_priority_fee_per_gas,
        "accessList": [],
    }
    signed = Account.sign_transaction(fields, private_key)
    return SignedTx(bytes(signed.raw_transaction), "0x" + bytes(signed.hash).hex())


class Keyring:
    """The keys one executor signs with (``execution.ports.Keyring``); lowercase
    addresses and signed bytes out, keys never out."""

    def __init__(self, relayer: bytes | None, gas_tank: bytes | None, intents: IntentKeys) -> None:
        self._relayer = relayer
        self._gas_tank = gas_tank
        self._intents = intents
        self._intent_addresses: dict[int, str] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> Keyring:
        """Load every key the executor may need; raise ConfigError naming a missing one."""
        return cls(
            settings.relayer_private_key(),
            settings.gas_tank_private_key(),
            settings.intent_keys(),
        )

    def __repr__(self) -> str:
        return "Keyring(<secret>)"

    def check_relayer(self, chain: ChainConfig) -> None:
        """The relayer key must belong to the chain's configured relayer, when one is set."""
        if chain.relayer and self.address(SignerKind.RELAYER).lower() != chain.relayer.lower():
            raise ConfigError(
                f"chains.{chain.name}.relayer = {chain.relayer}: INTENTD_RELAYER_KEY belongs to"
                f" {self.address(SignerKind.RELAYER)}, another address"
            )

    def sign(
        self, plan: TxPlan, kind: SignerKind, index: int | None, *, chain_id: int, nonce: int
    ) -> SignedTx:
        return sign(plan, chain_id=chain_id, nonce=nonce, private_key=self.key(kind, index))

    def key(self, kind: SignerKind, index: int | None = None) -> bytes:
        if kind is SignerKind.INTENT:
            if index is None:
                raise ValueError("an intent signer needs its HD index")
            return self._intents.private_key(index)
        key = self._relayer if kind is SignerKind.RELAYER else self._gas_tank
        if key is None:
            raise ConfigError(f"{kind.value}_key: not set")
        return key

    def address(self, kind: SignerKind, index: int | None = None) -> str:
        """Lowercase address of a signer."""
        if kind is SignerKind.INTENT and index is not None:
            cached = self._intent_addresses.get(index)
            if cached is None:
                cached = address_of_key(self.key(kind, index)).lower()
                self._intent_addresses[index] = cached
            return cached
        return address_of_key(self.key(kind, index)).lower()
