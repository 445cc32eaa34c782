"""Where secrets come from, and the refusals that keep them out of shared files.

- :data:`SECRET_KEYS`: the settings keys read only from the environment, by variable.
- :func:`secrets_in_file`: the top-level keys of a config file that name a secret, and
  a database URL carrying a literal password. Secrets come from the environment or
  from files the environment names, never from the config file, which is shared,
  copied into ConfigMaps and committed.
- :func:`secret_from_env`: a secret from ``NAME`` or from the file ``NAME_FILE`` names;
  errors name the variable, never the secret.
- :func:`secret_file_problem`: a secret file must not be readable by others; by its
  group only if root owns it read-only for the group (the PostgreSQL rule for its key
  file, and what Kubernetes makes of a Secret volume with ``fsGroup``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from intentd.settings.base import ConfigError

__all__ = ["SECRET_KEYS", "secret_file_problem", "secret_from_env", "secrets_in_file"]

SECRET_KEYS: Mapping[str, str] = {
    "hd_mnemonic": "INTENTD_HD_MNEMONIC",
    "hd_xpub": "INTENTD_HD_XPUB",
    "session_secret": "INTENTD_SESSION_SECRET",
    "relayer_key": "INTENTD_RELAYER_KEY",
    "gas_tank_key": "INTENTD_GAS_TANK_KEY",
    "webhook_key": "INTENTD_WEBHOOK_KEY",
    "console_key": "INTENTD_CONSOLE_KEY",
}
"""Settings keys read only from the environment (or a file it names), by variable.
``hd_xpub`` is no secret (it cannot spend) but links every intent address to us."""

_ENV_REF = re.compile(r"\$\{[^}]*\}")
_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s]*:[^/@\s]+@", re.IGNORECASE)


def secrets_in_file(raw: Mapping[str, Any]) -> list[str]:
    """One message per secret found in a parsed config file (before interpolation)."""
    found = [
        f"{key}: secrets are not read from the config file; give {variable} or"
        f" {variable}_FILE in the environment"
        for key, variable in SECRET_KEYS.items()
        if key in raw
    ]
    database = raw.get("database")
    url = database.get("url") if isinstance(database, Mapping) else None
    if isinstance(url, str) and _PASSWORD.search(_ENV_REF.sub("", url)):
        found.append(
            "database.url: carries a password in the config file; write"
            ' url = "${INTENTD_DATABASE_URL}" and give the URL in the environment'
        )
    return found


def secret_file_problem(mode: int, owner: int) -> str | None:
    """Why a secret file with ``st_mode`` ``mode`` owned by uid ``owner`` is refused."""
    permissions = stat.S_IMODE(mode)
    if permissions & 0o007:
        return f"mode {permissions:04o} lets others read it; chmod 600"
    if permissions & 0o070 and (owner != 0 or permissions & 0o030):
        return f"mode {permissions:04o} lets its group read it; chmod 600 (or 640 owned by root)"
    return None


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
