"""Typed settings, read once at start: ``from intentd.settings import Settings, load_settings``.

A config file (TOML) names everything that is not secret. Values may refer to the
environment as ``${NAME}`` or ``${NAME:-default}``; the files listed in the top-level
``env_files`` key (paths relative to the config file; missing files are skipped) are
read first and the real environment overrides them. Any key can also be overridden
from the environment as ``INTENTD__SECTION__KEY=value`` (for example
``INTENTD__KAFKA__BOOTSTRAP_SERVERS``).

Secrets never live in the config file (one there is refused, naming the key): the HD
mnemonic comes from ``INTENTD_HD_MNEMONIC`` or the file named by
``INTENTD_HD_MNEMONIC_FILE``, the session-token signing secret from
``INTENTD_SESSION_SECRET(_FILE)``, the relayer and gas-tank keys from
``INTENTD_RELAYER_KEY(_FILE)`` and ``INTENTD_GAS_TANK_KEY(_FILE)``. The extended
public key of intent addresses comes the same way, from ``INTENTD_HD_XPUB(_FILE)``
(it cannot spend, but it links every intent address to us). A secret file that
others (or, unless root owns it, its group) can read is refused.

Least privilege (docs/configuration.md, Keys): roles that only need intent addresses
(the API, ``intents create``) use :meth:`Settings.intent_addresses`, which needs the
xpub alone; the executor uses :meth:`Settings.intent_keys`, which needs the mnemonic.
A mnemonic and an xpub given together must agree, or the config is refused.

An invalid config raises :class:`ConfigError`, whose message names the key and the
value that is wrong (never a secret; RPC URLs only as ``scheme://host/<redacted>``);
the CLI prints it and exits non-zero. Every chain that can be a route's destination
needs its ``relayer``: the prefill is paid from it and repaid to it.

Modules: :mod:`~intentd.settings.loading` (TOML, interpolation, overrides),
:mod:`~intentd.settings.secrets` (secrets from the environment, refusals),
:mod:`~intentd.settings.redaction` (what may be shown), :mod:`~intentd.settings.model`
(``Settings`` and its cross-section rules), :mod:`~intentd.settings.chains`,
:mod:`~intentd.settings.tokens` and :mod:`~intentd.settings.sections` (one model per
section), :mod:`~intentd.settings.base` (the error, the base model, addresses).
"""

from intentd.settings.base import NATIVE_TOKEN, Address, ConfigError
from intentd.settings.chains import OP_STACK_CHAIN_IDS, ChainConfig
from intentd.settings.console import ConsoleConfig
from intentd.settings.liquidity import LiquidityConfig
from intentd.settings.loading import load_settings
from intentd.settings.model import Settings
from intentd.settings.pricing import PriceFeedConfig, PricingConfig
from intentd.settings.secrets import secret_from_env
from intentd.settings.sections import (
    ApiConfig,
    BridgeOption,
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
from intentd.settings.tokens import MIN_SWEEP_DEFAULTS, NativeTokenConfig, TokenConfig

__all__ = [
    "MIN_SWEEP_DEFAULTS",
    "NATIVE_TOKEN",
    "OP_STACK_CHAIN_IDS",
    "Address",
    "ApiConfig",
    "BridgeOption",
    "ChainConfig",
    "ConfigError",
    "ConsoleConfig",
    "DatabaseConfig",
    "ExecutionConfig",
    "FeesConfig",
    "IndexerConfig",
    "IntentsConfig",
    "KafkaConfig",
    "LiquidityConfig",
    "NativeTokenConfig",
    "ObservabilityConfig",
    "PriceFeedConfig",
    "PricingConfig",
    "ProcessConfig",
    "Settings",
    "TokenConfig",
    "WebhooksConfig",
    "load_settings",
    "secret_from_env",
]
