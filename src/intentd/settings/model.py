"""The whole configuration, :class:`Settings`, and the rules that span its sections.

Guarantees, checked when the config is read: chain keys are upper case and equal their
names, chain ids are unique, every chain that can be a route's destination has its
``relayer``, prices are positive, a main network is priced by feeds and never by the
static table (:mod:`~intentd.settings.pricing`), a session secret has at least 32
characters, and a mnemonic and an xpub given together agree. The accessors of keys raise
:class:`ConfigError` naming the variable to set when a role needs a key it was not
given (least privilege, docs/configuration.md, Keys).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from intentd.custody import IntentKeys
from intentd.extended_keys import ExtendedPublicKey, IntentAddresses
from intentd.settings.base import ConfigError, ConfigModel
from intentd.settings.chains import ChainConfig
from intentd.settings.console import ConsoleConfig
from intentd.settings.liquidity import LiquidityConfig
from intentd.settings.pricing import PricingConfig, check_price_sources
from intentd.settings.sections import (
    ApiConfig,
    DatabaseConfig,
    ExecutionConfig,
    FeesConfig,
    IndexerConfig,
    IntentsConfig,
    KafkaConfig,
    ObservabilityConfig,
    ProcessConfig,
    WebhooksConfig,
)


class Settings(ConfigModel):
    environment: Literal["production", "test"] = "production"
    """``test`` marks a test deployment (test API keys may also use main networks)."""
    database: DatabaseConfig
    kafka: KafkaConfig
    chains: dict[str, ChainConfig] = Field(min_length=1)
    intents: IntentsConfig = IntentsConfig()
    indexer: IndexerConfig = IndexerConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    process: ProcessConfig = ProcessConfig()
    api: ApiConfig = ApiConfig()
    fees: FeesConfig = FeesConfig()
    prices: dict[str, Decimal] = Field(default_factory=dict)
    """Static USD prices by token symbol, for test networks only (docs/pricing.md)."""
    pricing: PricingConfig = PricingConfig()
    hd_mnemonic: SecretStr | None = None
    """From the environment only (see module docstring); only the executor needs it."""
    hd_xpub: str | None = None
    """From the environment only: the xpub of ``m/44'/60'/0'/0`` (``intentd keys xpub``)."""
    session_secret: SecretStr | None = None
    """From the environment only; signs session tokens. Sessions are off without it."""
    execution: ExecutionConfig = ExecutionConfig()
    liquidity: LiquidityConfig = LiquidityConfig()
    relayer_key: SecretStr | None = None
    """From the environment only: ``INTENTD_RELAYER_KEY(_FILE)``, hex private key."""
    gas_tank_key: SecretStr | None = None
    """From the environment only: ``INTENTD_GAS_TANK_KEY(_FILE)``, hex private key."""
    webhooks: WebhooksConfig = WebhooksConfig()
    webhook_key: SecretStr | None = None
    """From the environment only: ``INTENTD_WEBHOOK_KEY(_FILE)``, seals webhook secrets."""
    console: ConsoleConfig = ConsoleConfig()
    console_key: SecretStr | None = None
    """From the environment only: ``INTENTD_CONSOLE_KEY(_FILE)``, seals console users'
    TOTP secrets (32 bytes, base64 or hex); without it the second factor is off."""

    @field_validator("prices")
    @classmethod
    def _positive_prices(cls, prices: dict[str, Decimal]) -> dict[str, Decimal]:
        for symbol, price in prices.items():
            if not price.is_finite() or price <= 0:
                raise ValueError(f"price of {symbol} must be a positive number")
        return prices

    @field_validator("hd_xpub")
    @classmethod
    def _xpub(cls, xpub: str | None) -> str | None:
        if xpub is not None:
            IntentAddresses(ExtendedPublicKey.parse(xpub))  # raises, saying what is wrong
        return xpub

    @field_validator("session_secret")
    @classmethod
    def _long_secret(cls, secret: SecretStr | None) -> SecretStr | None:
        if secret is not None and len(secret.get_secret_value()) < 32:
            raise ValueError("must be at least 32 characters")
        return secret

    @model_validator(mode="before")
    @classmethod
    def _chain_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("chains"), dict):
            for name, chain in data["chains"].items():
                if isinstance(chain, dict):
                    chain.setdefault("name", name)
        return data

    @model_validator(mode="after")
    def _names_match(self) -> Settings:
        for key, chain in self.chains.items():
            if key != chain.name or not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
                raise ValueError(f"chain key {key!r} must be upper case and equal its name")
        ids = [c.chain_id for c in self.chains.values()]
        if len(ids) != len(set(ids)):
            raise ValueError("two chains share a chain_id")
        return self

    @model_validator(mode="after")
    def _destinations_have_relayers(self) -> Settings:
        for name in self.destination_chains():
            if not self.chains[name].relayer:
                raise ValueError(
                    f"chains.{name}.relayer = '': {name} can be a route's destination"
                    " (fees.bridges), and its prefills are paid by the relayer and repaid"
                    " to it; give the relayer's address"
                )
        return self

    @model_validator(mode="after")
    def _prices_from_feeds(self) -> Settings:
        check_price_sources(self.chains, self.prices)
        return self

    @model_validator(mode="after")
    def _watch_outlasts_an_intent(self) -> Settings:
        days = self.indexer.watch_retention_days
        if days * 86_400 < self.intents.max_expires_in:
            raise ValueError(
                f"indexer.watch_retention_days = {days} is shorter than intents.max_expires_in"
                f" ({self.intents.max_expires_in} s): an intent cancelled at once can still be"
                " paid until it expires, and that payment must be seen"
            )
        return self

    @model_validator(mode="after")
    def _keys_agree(self) -> Settings:
        if self.hd_mnemonic is not None and self.hd_xpub is not None:
            derived = IntentKeys(self.hd_mnemonic.get_secret_value()).xpub.serialize()
            if derived != ExtendedPublicKey.parse(self.hd_xpub).serialize():
                raise ValueError(
                    f"hd_xpub (INTENTD_HD_XPUB) = {self.hd_xpub} is not the extended public"
                    " key of hd_mnemonic (INTENTD_HD_MNEMONIC), which gives"
                    f" {derived}: intents would get addresses the executor cannot sign for"
                )
        return self

    def destination_chains(self) -> list[str]:
        """Chains some bridge option serves as the destination of a route from another."""
        return [
            destination
            for destination in self.chains
            if any(
                bridge.serves(source, destination)
                for bridge in self.fees.bridges
                for source in self.chains
                if source != destination
            )
        ]

    def chain(self, name: str) -> ChainConfig:
        try:
            return self.chains[name]
        except KeyError:
            raise ConfigError(
                f"unknown chain {name!r}; configured: {sorted(self.chains)}"
            ) from None

    def relayer_private_key(self) -> bytes:
        return _private_key(self.relayer_key, "relayer_key", "INTENTD_RELAYER_KEY")

    def gas_tank_private_key(self) -> bytes:
        return _private_key(self.gas_tank_key, "gas_tank_key", "INTENTD_GAS_TANK_KEY")

    def mnemonic(self) -> str:
        if self.hd_mnemonic is None:
            raise ConfigError(
                "hd_mnemonic: not set; give INTENTD_HD_MNEMONIC or INTENTD_HD_MNEMONIC_FILE"
                " (only the executor needs it)"
            )
        return self.hd_mnemonic.get_secret_value()

    def intent_keys(self) -> IntentKeys:
        """The intent keys, for a role that signs; ConfigError without the mnemonic."""
        return IntentKeys(self.mnemonic())

    def intent_addresses(self) -> IntentAddresses:
        """Intent addresses, for a role that does not sign: from ``hd_xpub``; without
        it from the mnemonic (development: one secret file for everything)."""
        if self.hd_xpub is not None:
            return IntentAddresses(ExtendedPublicKey.parse(self.hd_xpub))
        if self.hd_mnemonic is not None:
            return IntentAddresses(self.intent_keys().xpub)
        raise ConfigError(
            "hd_xpub: not set; give INTENTD_HD_XPUB or INTENTD_HD_XPUB_FILE (print it with"
            " `intentd keys xpub` where the mnemonic is)"
        )


def _private_key(secret: SecretStr | None, field: str, variable: str) -> bytes:
    if secret is None:
        raise ConfigError(f"{field}: not set; give {variable} or {variable}_FILE")
    text = secret.get_secret_value().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        raise ConfigError(f"{field} = <secret>: not a 32-byte hex private key")
    return bytes.fromhex(text)
