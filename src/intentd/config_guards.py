"""Pure rules that keep secrets out of config files, errors and logs (used by settings).

- :func:`secrets_in_file`: the top-level keys of a config file that name a secret, and
  a database URL carrying a literal password. Secrets come from the environment or
  from files the environment names, never from the config file, which is shared,
  copied into ConfigMaps and committed.
- :func:`secret_file_problem`: a secret file must not be readable by others; by its
  group only if root owns it read-only for the group (the PostgreSQL rule for its key
  file, and what Kubernetes makes of a Secret volume with ``fsGroup``).
- :func:`redact_url`: an RPC URL as it may be shown: scheme, host and port only
  (providers put their keys in the path, the query or the user part).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "SECRET_KEYS",
    "RpcUrl",
    "redact_url",
    "redact_urls_in",
    "secret_file_problem",
    "secrets_in_file",
]

SECRET_KEYS: Mapping[str, str] = {
    "hd_mnemonic": "INTENTD_HD_MNEMONIC",
    "hd_xpub": "INTENTD_HD_XPUB",
    "session_secret": "INTENTD_SESSION_SECRET",
    "relayer_key": "INTENTD_RELAYER_KEY",
    "gas_tank_key": "INTENTD_GAS_TANK_KEY",
    "webhook_key": "INTENTD_WEBHOOK_KEY",
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


def redact_url(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, with ``/<redacted>`` when it carried more."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<unparsable url>"
    shown = f"{parts.scheme}://{host}{port}"
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        return f"{shown}/<redacted>"
    return shown + parts.path


def redact_urls_in(text: str, urls: list[str]) -> str:
    """``text`` with every URL of ``urls`` in it replaced by its redacted form."""
    for url in sorted(urls, key=len, reverse=True):
        text = text.replace(url, redact_url(url))
    return text


class RpcUrl(str):
    """An RPC URL: used as given, shown redacted by ``repr`` (settings, config errors)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(redact_url(self))
