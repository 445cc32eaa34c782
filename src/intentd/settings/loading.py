"""Reading a config file: TOML, ``env_files``, ``${VAR}`` interpolation, overrides.

Order, later wins: the files named by the top-level ``env_files`` key (relative to the
config file; missing ones skipped), then the real environment; ``${NAME}`` and
``${NAME:-default}`` in values are replaced from that; then ``INTENTD__SECTION__KEY``
variables override keys (a value is read as TOML, else as a string); then the secrets
(:mod:`intentd.settings.secrets`). A secret in the file itself is refused before
anything else. Every failure is a :class:`ConfigError` naming the key or the file line.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from intentd.settings.base import ConfigError
from intentd.settings.model import Settings
from intentd.settings.redaction import describe_errors, redact_url
from intentd.settings.secrets import SECRET_KEYS, secret_from_env, secrets_in_file

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_OVERRIDE_PREFIX = "INTENTD__"


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
        raise ConfigError(describe_errors(exc, data, path)) from None


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
