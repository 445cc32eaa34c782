"""Typed settings, read once at start.

A config file (TOML) names everything that is not secret. Values may refer to the
environment as ``${NAME}`` or ``${NAME:-default}``; the files listed in the top-level
``env_files`` key (paths relative to the config file; missing files are skipped) are
read first and the real environment overrides them. Any key can also be overridden
from the environment as ``INTENTD__SECTION__KEY=value`` (for example
``INTENTD__KAFKA__BOOTSTRAP_SERVERS``).

Secrets never live in the config file: the HD mnemonic comes from
``INTENTD_HD_MNEMONIC`` or the file named by ``INTENTD_HD_MNEMONIC_FILE``.

An invalid config raises :class:`ConfigError`, whose message names the key and the
value that is wrong; the CLI prints it and exits non-zero.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
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


class TokenConfig(_Model):
    """An ERC-20 token the chain supports (deposits of any other contract are ignored)."""

    address: Address
    symbol: str = Field(min_length=1, max_length=16)
    name: str = Field(min_length=1)
    decimals: int = Field(ge=0, le=36)
    category: Literal["stablecoin", "major", "volatile"]


class NativeTokenConfig(_Model):
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
    rpc_urls: list[str] = Field(min_length=1)
    confirmations: int = Field(default=1, ge=1, le=1000)
    """A block is processed once it has this many blocks on top of it, itself included."""
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
    coordinator: Address | Literal[""] = ""
    bridger: Address | Literal[""] = ""

    @field_validator("rpc_urls")
    @classmethod
    def _urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            if not re.match(r"^(https?|wss?)://[^\s/]+", url):
                raise ValueError(f"{url!r} is not an http(s) or ws(s) URL")
        return urls

    @model_validator(mode="after")
    def _unique_tokens(self) -> ChainConfig:
        seen: set[str] = set()
        for token in self.tokens:
            if token.address.lower() in seen or token.address == NATIVE_TOKEN:
                raise ValueError(f"token {token.address} is listed twice or is the native token")
            seen.add(token.address.lower())
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
    default_expires_in: int = Field(default=3600, ge=60)
    """Seconds from creation to ``expires_at`` when the request names none."""
    max_expires_in: int = Field(default=7 * 86400, ge=60)
    default_client_id: str = "00000000-0000-0000-0000-000000000000"
    """Client that owns intents created from the CLI."""


class ObservabilityConfig(_Model):
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    """Port of the Prometheus / health endpoint; None disables it."""


class Settings(_Model):
    environment: Literal["production", "test"] = "production"
    """``test`` marks a test deployment (test API keys may also use main networks)."""
    database: DatabaseConfig
    kafka: KafkaConfig
    chains: dict[str, ChainConfig] = Field(min_length=1)
    intents: IntentsConfig = IntentsConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    hd_mnemonic: SecretStr | None = None
    """From the environment only (see module docstring); required by roles that derive keys."""

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

    def chain(self, name: str) -> ChainConfig:
        try:
            return self.chains[name]
        except KeyError:
            raise ConfigError(
                f"unknown chain {name!r}; configured: {sorted(self.chains)}"
            ) from None

    def mnemonic(self) -> str:
        if self.hd_mnemonic is None:
            raise ConfigError(
                "hd_mnemonic: not set; give INTENTD_HD_MNEMONIC or INTENTD_HD_MNEMONIC_FILE"
            )
        return self.hd_mnemonic.get_secret_value()


def load_settings(path: Path, environ: Mapping[str, str] | None = None) -> Settings:
    """Read, interpolate and validate the config at ``path``; raise ConfigError if unusable."""
    environ = os.environ if environ is None else environ
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    env = _env_with_files(path.parent, raw.pop("env_files", []), environ)
    data = _interpolate(raw, env, "")
    _apply_overrides(data, env)
    secret = _secret(env, "INTENTD_HD_MNEMONIC")
    if secret is not None:
        data["hd_mnemonic"] = secret
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
            raise ConfigError(f"{key} = {value!r}: environment variable {name} is not set")

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


def _secret(env: Mapping[str, str], name: str) -> str | None:
    if name in env:
        return env[name].strip()
    file = env.get(f"{name}_FILE")
    if file is None:
        return None
    try:
        return Path(file).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{name}_FILE = {file!r}: cannot read it ({exc.strerror})") from None


def _describe(exc: ValidationError, data: Mapping[str, Any], path: Path) -> str:
    lines = [f"invalid config {path}:"]
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"])
        secret = any(str(p) in {"url", "hd_mnemonic"} for p in error["loc"])
        shown = "<secret>" if secret else repr(_lookup(data, error["loc"]))
        lines.append(f"  {loc or '(top level)'} = {shown}: {error['msg']}")
    return "\n".join(lines)


def _lookup(data: Any, loc: tuple[int | str, ...]) -> Any:
    node = data
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return "<missing>"
    return node
