"""One chain's section (``[chains.NAME]``): its family, where to read it, which tokens count.

Guarantees, checked when the config is read: the chain's ``family`` is one intentd
implements (:data:`ChainFamily`: ``evm`` only; another refuses to start, naming
``chains.NAME.family``); RPC URLs are http(s) or ws(s) and are shown
only redacted; no token is listed twice or under the native pseudo-address; a chain
with a token that sets ``verify_above`` has a second provider (``verify_rpc_urls``) that
is not one of its ``rpc_urls``. ``l1_fee`` unset is ``op_stack`` for the chain ids of
:data:`OP_STACK_CHAIN_IDS` and ``none`` for any other.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from intentd.domain.amounts import AmountError, parse_amount
from intentd.settings.base import NATIVE_TOKEN, Address, ConfigModel
from intentd.settings.redaction import RpcUrl, redact_url
from intentd.settings.tokens import NativeTokenConfig, TokenConfig

ChainFamily = Literal["evm"]
"""The chain families intentd talks to (``intentd.chain``; docs/architecture.md, A second
chain family): a chain of another family is refused when the config is read."""

OP_STACK_CHAIN_IDS = frozenset({10, 8453, 84532, 11155420})
"""OP Mainnet, Base, Base Sepolia, OP Sepolia: their ``l1_fee`` defaults to ``op_stack``."""


class ChainConfig(ConfigModel):
    """One chain: its family, where to read it, how deep to wait, which tokens count."""

    name: str
    family: ChainFamily = "evm"
    """How the chain is talked to (``intentd.chain.evm`` and ``intentd.adapters.evm`` for
    ``evm``, the one family implemented); the settings below are EVM ones."""
    chain_id: int = Field(gt=0)
    network: Literal["main", "test"]
    rpc_urls: list[Annotated[str, AfterValidator(RpcUrl)]] = Field(min_length=1)
    """Used as given; shown only redacted (``repr``, errors, logs): they carry provider keys."""
    confirmations: int = Field(default=1, ge=1, le=1000)
    """A block is processed once it has this many blocks on top of it, itself included."""
    head: Literal["latest", "safe", "finalized"] = "latest"
    """The head deposits count against: the node's ``latest`` block, or the chain's
    ``safe`` / ``finalized`` block (OP stack, Arbitrum); ``confirmations`` counts down
    from it (docs/indexer.md, Which head)."""
    poll_interval: float = Field(default=1.0, gt=0, le=60)
    batch_size: int = Field(default=100, ge=1, le=5000)
    """Blocks fetched per JSON-RPC batch while catching up."""
    max_log_range: int = Field(default=2000, ge=1, le=100_000)
    """Widest ``eth_getLogs`` block range tried before splitting."""
    rpc_timeout: float = Field(default=10.0, gt=0, le=300)
    rpc_batch_limit: int = Field(default=100, ge=1, le=10_000)
    """Most calls the provider accepts in one JSON-RPC batch (geth and Alchemy: 1000,
    Erigon: 100). The balance reconciliation's reads (small answers) fill POSTs up to
    it; full blocks go 50 to a POST whatever it says."""
    start_block: int | Literal["latest"] = "latest"
    """Where a chain with no stored cursor starts; ``latest`` is the confirmed head."""
    native: NativeTokenConfig = NativeTokenConfig()
    tokens: list[TokenConfig] = Field(default_factory=list)
    relayer: Address | Literal[""] = ""
    """The relayer's address on this chain: it prefills here and is repaid here."""
    fee_account: Address | Literal[""] = ""
    """Receives the fees of intents paid on this chain; empty: the relayer keeps them."""
    coordinator: Address | Literal[""] = ""
    bridger: Address | Literal[""] = ""
    max_fee_per_gas: int = Field(default=500 * 10**9, gt=0)
    """Cap of the executor's EIP-1559 ``maxFeePerGas``, wei; above it, actions wait."""
    verify_rpc_urls: list[Annotated[str, AfterValidator(RpcUrl)]] = Field(default_factory=list)
    """A second, independent provider that confirms large deposits before their prefill
    (a token's ``verify_above``); required when a token sets it. Shown only redacted."""
    reconciled_identity: Literal["transaction", "block"] = "transaction"
    """How ETH that reached an intent address through a contract is identified:
    ``transaction``, by the transaction that paid it (the same on every fork; the
    provider must answer ``debug_traceBlockByHash`` with the ``prestateTracer``, asked
    only for blocks with such a payment), or ``block``, by its block (any provider; a
    reorg that moves the payment retracts it and credits it again as a new deposit).
    docs/indexer.md, ETH that arrives through a contract."""
    gas_tank_alert_below: str | None = None
    """Alert (``IntentdGasTankLow``) while the gas tank's native balance on the chain is
    below this (whole units of the native coin, a decimal string). Unset: no alert."""
    explorer_url: str = ""
    """The chain's block explorer (``https://sepolia.basescan.org``): the console links
    transactions as ``{explorer_url}/tx/{hash}`` and addresses as
    ``{explorer_url}/address/{address}``. Empty: no links."""
    l1_fee: Literal["op_stack", "none"] = "none"
    """``op_stack``: the chain charges an OP-stack L1 data fee on top of gas, which native
    sweeps reserve (docs/execution.md). Unset: ``op_stack`` for the chain ids of
    :data:`OP_STACK_CHAIN_IDS`, else ``none``; an anvil on such an id says ``none``."""

    sequencer_uptime_feed: Address | Literal[""] = ""
    """Chainlink's L2 sequencer uptime feed on this chain (answer 0: up, 1: down); set, a
    price read on this chain is refused while the sequencer is down and for
    ``sequencer_grace`` seconds after it came back (docs/pricing.md)."""
    sequencer_grace: int = Field(default=3600, ge=0, le=86_400)

    @model_validator(mode="before")
    @classmethod
    def _l1_fee_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and "l1_fee" not in data:
            known = str(data.get("chain_id")) in {str(i) for i in OP_STACK_CHAIN_IDS}
            data = {**data, "l1_fee": "op_stack" if known else "none"}
        return data

    @field_validator("explorer_url")
    @classmethod
    def _explorer(cls, url: str) -> str:
        if url and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
            raise ValueError(f"{url!r} is not an http(s) URL without query or fragment")
        return url.rstrip("/")

    @field_validator("rpc_urls", "verify_rpc_urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            if not re.match(r"^(https?|wss?)://[^\s/]+", url):
                raise ValueError(f"{redact_url(url)!r} is not an http(s) or ws(s) URL")
        return urls

    @model_validator(mode="after")
    def _unique_tokens(self) -> ChainConfig:
        seen: set[str] = set()
        for token in self.tokens:
            if token.address.lower() in seen or token.address == NATIVE_TOKEN:
                raise ValueError(f"token {token.address} is listed twice or is the native token")
            seen.add(token.address.lower())
        return self

    @model_validator(mode="after")
    def _verifier_given(self) -> ChainConfig:
        checked = [t.symbol for t in (self.native, *self.tokens) if t.verify_above is not None]
        if checked and not self.verify_rpc_urls:
            raise ValueError(
                f"chains.{self.name}.verify_rpc_urls is empty but {', '.join(checked)} set"
                " verify_above: large deposits would be paid unconfirmed; give a second"
                " provider's URLs"
            )
        overlap = set(self.verify_rpc_urls) & set(self.rpc_urls)
        if overlap:
            raise ValueError(
                f"chains.{self.name}.verify_rpc_urls repeats an rpc_urls entry: the second"
                " provider must be another one"
            )
        return self

    @model_validator(mode="after")
    def _gas_tank_alert(self) -> ChainConfig:
        if self.gas_tank_alert_below is not None:
            try:
                parse_amount(self.gas_tank_alert_below, self.native.decimals, allow_zero=True)
            except AmountError as exc:
                raise ValueError(f"chains.{self.name}.gas_tank_alert_below: {exc}") from None
        return self

    @property
    def gas_tank_alert_below_units(self) -> int | None:
        """``gas_tank_alert_below`` in wei (base units of the native coin), or None."""
        if self.gas_tank_alert_below is None:
            return None
        return parse_amount(self.gas_tank_alert_below, self.native.decimals, allow_zero=True)

    def token(self, address: str) -> TokenConfig | NativeTokenConfig | None:
        """The supported token at ``address`` (any case), or None."""
        if address.lower() == NATIVE_TOKEN.lower():
            return self.native
        for token in self.tokens:
            if token.address.lower() == address.lower():
                return token
        return None

    def token_by_symbol(self, symbol: str) -> tuple[str, TokenConfig | NativeTokenConfig] | None:
        """(address, token) of the supported token with ``symbol``, or None."""
        if self.native.symbol == symbol:
            return NATIVE_TOKEN, self.native
        for token in self.tokens:
            if token.symbol == symbol:
                return token.address, token
        return None
