"""Typed settings, read once at start.

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
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from eth_utils import is_address, to_checksum_address
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from intentd.config_guards import (
    SECRET_KEYS,
    RpcUrl,
    redact_url,
    secret_file_problem,
    secrets_in_file,
)
from intentd.custody import IntentKeys
from intentd.domain.amounts import AmountError, parse_amount
from intentd.extended_keys import ExtendedPublicKey, IntentAddresses
from intentd.webhooks.config import WebhooksConfig

NATIVE_TOKEN = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"
"""Pseudo-address that stands for a chain's native coin wherever a token address goes."""

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_OVERRIDE_PREFIX = "INTENTD__"


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and value."""


def _checksum(value: str) -> str:
    if not isinstance(value, str) or not is_address(value):
        raise ValueError("not an EVM address (0x followed by 40 hex digits, valid checksum)")
    return to_checksum_address(value)


Address = Annotated[str, AfterValidator(_checksum)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


MIN_SWEEP_DEFAULTS = {"stablecoin": "0.1", "major": "0.00005"}
"""Default ``min_sweep`` per token category, whole units (see docs/execution.md)."""


class _SweptToken(_Model):
    """What every supported token says about moving it out of an intent address."""

    symbol: str
    decimals: int
    category: Literal["stablecoin", "major", "volatile"]
    min_sweep: str | None = None
    """Smallest amount (whole units, a decimal string) a user refund or a fee sweep
    moves out of an intent address; a smaller one is retained there. Default: 0.1 for
    a stablecoin, 0.00005 for a major token; a volatile token must set it."""

    verify_above: str | None = None
    """Above this sum of an intent's credited deposits of the token (whole units, a
    decimal string), each of them is confirmed by the chain's ``verify_rpc_urls``
    before the prefill is signed (docs/execution.md). Unset: never."""

    @model_validator(mode="after")
    def _verify_above(self) -> _SweptToken:
        if self.verify_above is not None:
            try:
                parse_amount(self.verify_above, self.decimals, allow_zero=True)
            except AmountError as exc:
                raise ValueError(f"verify_above of {self.symbol}: {exc}") from None
        return self

    @property
    def verify_above_units(self) -> int | None:
        """``verify_above`` in base units, or None."""
        if self.verify_above is None:
            return None
        return parse_amount(self.verify_above, self.decimals, allow_zero=True)

    @model_validator(mode="after")
    def _min_sweep(self) -> _SweptToken:
        text = self.min_sweep or MIN_SWEEP_DEFAULTS.get(self.category)
        if text is None:
            raise ValueError(f"min_sweep: token {self.symbol} is volatile; set its minimum")
        try:
            parse_amount(text, self.decimals, allow_zero=True)
        except AmountError as exc:
            raise ValueError(f"min_sweep of {self.symbol}: {exc}") from None
        return self

    @property
    def min_sweep_units(self) -> int:
        """``min_sweep`` in base units."""
        text = self.min_sweep or MIN_SWEEP_DEFAULTS[self.category]
        return parse_amount(text, self.decimals, allow_zero=True)


class TokenConfig(_SweptToken):
    """An ERC-20 token the chain supports (deposits of any other contract are ignored)."""

    address: Address
    symbol: str = Field(min_length=1, max_length=16)
    name: str = Field(min_length=1)
    decimals: int = Field(ge=0, le=36)
    category: Literal["stablecoin", "major", "volatile"]


class NativeTokenConfig(_SweptToken):
    """The chain's native coin; it appears under the address ``NATIVE_TOKEN``."""

    symbol: str = "ETH"
    name: str = "Ether"
    decimals: int = Field(default=18, ge=0, le=36)
    category: Literal["stablecoin", "major", "volatile"] = "major"


class ChainConfig(_Model):
    """One EVM chain: where to read it, how deep to wait, which tokens count."""

    name: str
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


class DatabaseConfig(_Model):
    url: SecretStr
    min_pool: int = Field(default=1, ge=0)
    max_pool: int = Field(default=10, ge=1)

    @field_validator("url")
    @classmethod
    def _dsn(cls, url: SecretStr) -> SecretStr:
        if not url.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return url


class KafkaConfig(_Model):
    bootstrap_servers: str = Field(min_length=1)
    client_id: str = "intentd"
    topic_prefix: str = Field(default="intentd", pattern=r"^[A-Za-z0-9._-]+$")
    lifecycle_group: str = "intentd-lifecycle"


class IntentsConfig(_Model):
    default_expires_in: int = Field(default=3600, ge=1)
    """Seconds from creation to ``expires_at`` when the request names none."""
    min_expires_in: int = Field(default=60, ge=1)
    """Shortest lifetime a request may ask for (tests and demos may lower it)."""
    max_expires_in: int = Field(default=7 * 86400, ge=60)
    default_client_id: str = "00000000-0000-0000-0000-000000000000"
    """Client that owns intents created from the CLI."""


class ObservabilityConfig(_Model):
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    """Port of the Prometheus / health endpoint; None disables it."""


class BridgeOption(_Model):
    """One way to move value between chains, with its fee (see docs/api.md, Fees)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")
    fixed_usd: Decimal = Field(default=Decimal(0), ge=0, le=1_000_000)
    """Flat fee per intent, in USD, charged in ``tokenIn`` at its USD price."""
    bps: Decimal = Field(default=Decimal(0), ge=0, le=10_000)
    """Proportional fee in basis points (1/10,000) of the amount."""
    routes: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    """Routes it serves: ``"*"`` or ``"SOURCE->DESTINATION"`` (either side may be ``*``)."""
    estimated_seconds: int = Field(default=30, ge=1, le=86_400)

    @field_validator("routes")
    @classmethod
    def _route_patterns(cls, routes: list[str]) -> list[str]:
        for route in routes:
            if route != "*" and not re.fullmatch(
                r"(\*|[A-Z][A-Z0-9_]*)->(\*|[A-Z][A-Z0-9_]*)", route
            ):
                raise ValueError(
                    f"route {route!r} must be '*' or 'SOURCE->DESTINATION' ('*' allowed)"
                )
        return routes

    def serves(self, source: str, destination: str) -> bool:
        for route in self.routes:
            if route == "*":
                return True
            src, _, dst = route.partition("->")
            if src in ("*", source) and dst in ("*", destination):
                return True
        return False


class FeesConfig(_Model):
    """The fee model: a route fee per bridge option plus the application fee."""

    app_fee_bps: Decimal = Field(default=Decimal(0), ge=0, le=10_000)
    app_fee_fixed_usd: Decimal = Field(default=Decimal(0), ge=0, le=1_000_000)
    bridges: list[BridgeOption] = Field(
        default_factory=lambda: [BridgeOption(name="relay")], min_length=1
    )

    @model_validator(mode="after")
    def _unique_names(self) -> FeesConfig:
        names = [b.name for b in self.bridges]
        if len(names) != len(set(names)):
            raise ValueError("two bridge options share a name")
        return self


class ApiConfig(_Model):
    """The HTTP API role (``intentd api``)."""

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    replicas: int = Field(default=1, ge=1, le=1000)
    """API replicas (hosts or pods) behind the load balancer."""
    default_rate_limit: int = Field(default=250, ge=1, le=1_000_000)
    """Requests per second per API key, unless the key has its own limit."""
    key_cache_ttl: float = Field(default=5.0, ge=0, le=300)
    """Seconds a verified (or unknown) key is trusted without a database read."""
    session_ttl: int = Field(default=900, ge=60, le=86_400)
    """Default lifetime of a session token, seconds."""
    max_session_ttl: int = Field(default=3600, ge=60, le=86_400)
    trigger_max_blocks: int = Field(default=5000, ge=1, le=1_000_000)
    """Blocks one trigger-processing call scans at most; the next call continues."""
    trigger_clock_skew: int = Field(default=300, ge=0, le=86_400)
    """Seconds before ``created_at`` where the scan of an intent's window starts."""
    cors_origins: list[str] = Field(default_factory=list)
    """Origins allowed to call the session endpoints from a browser (the payment modal)."""
    workers: int = Field(default=1, ge=1, le=64)
    """Processes serving the API in each replica (``intentd api`` only; ``run`` uses one)."""

    @property
    def rate_limit_shares(self) -> int:
        """Processes that each enforce ``rate limit / shares`` of every key: one token
        bucket per key per process, and ``replicas * workers`` processes."""
        return self.replicas * self.workers


class ExecutionConfig(_Model):
    """The executors (``intentd execute --chain NAME``); see docs/execution.md."""

    poll_interval: float = Field(default=0.5, gt=0, le=60)
    """Seconds between looks for work when no NOTIFY arrives."""
    stuck_after: float = Field(default=30.0, gt=0, le=86_400)
    """Seconds without a receipt before a transaction is re-broadcast or replaced."""
    max_attempts: int = Field(default=3, ge=1, le=100)
    """Failed attempts (reverts, nonces taken by others) before an action fails."""
    retry_backoff: float = Field(default=5.0, ge=0, le=3600)
    """Seconds before the second attempt; doubled for each further one."""
    topup_headroom_bps: int = Field(default=10_000, ge=0, le=100_000)
    """Gas top-ups carry this much more (1/10,000) than one transfer at today's fees."""
    unconfirmed_alert_after: float = Field(default=900.0, ge=0, le=86_400)
    """Seconds a prefill may wait for the second provider to confirm its deposits
    before an operator alert (it keeps waiting after it)."""


class Settings(_Model):
    environment: Literal["production", "test"] = "production"
    """``test`` marks a test deployment (test API keys may also use main networks)."""
    database: DatabaseConfig
    kafka: KafkaConfig
    chains: dict[str, ChainConfig] = Field(min_length=1)
    intents: IntentsConfig = IntentsConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    api: ApiConfig = ApiConfig()
    fees: FeesConfig = FeesConfig()
    prices: dict[str, Decimal] = Field(default_factory=dict)
    """Static USD prices by token symbol for non-stablecoins (stablecoins are 1 USD)."""
    hd_mnemonic: SecretStr | None = None
    """From the environment only (see module docstring); only the executor needs it."""
    hd_xpub: str | None = None
    """From the environment only: the xpub of ``m/44'/60'/0'/0`` (``intentd keys xpub``)."""
    session_secret: SecretStr | None = None
    """From the environment only; signs session tokens. Sessions are off without it."""
    execution: ExecutionConfig = ExecutionConfig()
    relayer_key: SecretStr | None = None
    """From the environment only: ``INTENTD_RELAYER_KEY(_FILE)``, hex private key."""
    gas_tank_key: SecretStr | None = None
    """From the environment only: ``INTENTD_GAS_TANK_KEY(_FILE)``, hex private key."""
    webhooks: WebhooksConfig = WebhooksConfig()
    webhook_key: SecretStr | None = None
    """From the environment only: ``INTENTD_WEBHOOK_KEY(_FILE)``, seals webhook secrets."""

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


def load_settings(path: Path, environ: Mapping[str, str] | None = None) -> Settings:
    """Read, interpolate and validate the config at ``path``; raise ConfigError if unusable."""
    environ = os.environ if environ is None else environ
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    refused = secrets_in_file(raw)
    if refused:
        raise ConfigError(f"{refused[0]} (config file {path})")
    env = _env_with_files(path.parent, raw.pop("env_files", []), environ)
    data = _interpolate(raw, env, "")
    _apply_overrides(data, env)
    for field, variable in SECRET_KEYS.items():
        secret = secret_from_env(env, variable)
        if secret is not None:
            data[field] = secret
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, data, path)) from None


def _env_with_files(base: Path, files: Any, environ: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ConfigError(f"env_files = {files!r}: must be a list of paths")
    env: dict[str, str] = {}
    for name in files:
        file = base / name
        if not file.is_file():
            continue
        for number, raw_line in enumerate(file.read_text().splitlines(), 1):
            line = raw_line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise ConfigError(f"{file}:{number}: expected KEY=VALUE")
            env[key.strip()] = value.strip()
    env.update(environ)
    return env


def _interpolate(value: Any, env: Mapping[str, str], key: str) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, env, f"{key}.{k}" if key else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, env, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            shown = redact_url(value) if "rpc_urls" in key else value
            raise ConfigError(f"{key} = {shown!r}: environment variable {name} is not set")

        return _ENV_REF.sub(substitute, value)
    return value


def _apply_overrides(data: dict[str, Any], env: Mapping[str, str]) -> None:
    for name, value in env.items():
        if not name.startswith(_OVERRIDE_PREFIX):
            continue
        path = [part.lower() for part in name[len(_OVERRIDE_PREFIX) :].split("__")]
        if path and path[0] == "chains" and len(path) > 1:
            path[1] = path[1].upper()
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{name}: {'.'.join(path)} does not name a config key")
            node = child
        node[path[-1]] = _parse_override(value)


def _parse_override(value: str) -> Any:
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return value


def _private_key(secret: SecretStr | None, field: str, variable: str) -> bytes:
    if secret is None:
        raise ConfigError(f"{field}: not set; give {variable} or {variable}_FILE")
    text = secret.get_secret_value().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        raise ConfigError(f"{field} = <secret>: not a 32-byte hex private key")
    return bytes.fromhex(text)


def secret_from_env(env: Mapping[str, str], name: str) -> str | None:
    """The secret in ``env[name]``, or in the file ``env[name + "_FILE"]`` names (refused
    if others can read it), or None; ConfigError naming the variable if unusable."""
    if name in env:
        return env[name].strip()
    file = env.get(f"{name}_FILE")
    if file is None:
        return None
    try:
        status = os.stat(file)
        problem = secret_file_problem(status.st_mode, status.st_uid)
        if problem is not None:
            raise ConfigError(f"{name}_FILE = {file!r}: refused, {problem}")
        return Path(file).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{name}_FILE = {file!r}: cannot read it ({exc.strerror})") from None


_SECRET_FIELDS = frozenset(
    {"url", "hd_mnemonic", "session_secret", "relayer_key", "gas_tank_key", "webhook_key"}
)
_URL_FIELDS = frozenset({"rpc_urls", "verify_rpc_urls"})


def _describe(exc: ValidationError, data: Mapping[str, Any], path: Path) -> str:
    lines = [f"invalid config {path}:"]
    for error in exc.errors():
        if not error["loc"]:  # a rule across keys: its message names them (no values)
            lines.append(f"  {error['msg'].removeprefix('Value error, ')}")
            continue
        loc = ".".join(str(p) for p in error["loc"])
        value = _lookup(data, error["loc"])
        if any(str(p) in _SECRET_FIELDS for p in error["loc"]):
            shown = "<secret>"
        elif error["loc"] == ("hd_xpub",) and not str(value).startswith("xpub"):
            shown = "<not shown>"  # it may be a private key pasted by mistake
        elif any(str(p) in _URL_FIELDS for p in error["loc"]):
            shown = repr(_redacted(value))
        else:
            shown = repr(_shown(value))
        lines.append(f"  {loc} = {shown}: {error['msg']}")
    return "\n".join(lines)


def _shown(value: Any) -> Any:
    """``value`` (a config subtree) with its secrets hidden and its URLs redacted."""
    if isinstance(value, dict):
        return {
            k: "<secret>"
            if k in _SECRET_FIELDS
            else _redacted(v)
            if k in _URL_FIELDS
            else _shown(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def _lookup(data: Any, loc: tuple[int | str, ...]) -> Any:
    node = data
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return "<missing>"
    return node
