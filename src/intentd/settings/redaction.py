"""What of a config may be shown: RPC URLs redacted, secrets hidden.

- :func:`redact_url`: an RPC URL as it may be shown: scheme, host and port only
  (providers put their keys in the path, the query or the user part).
- :class:`RpcUrl`: an RPC URL used as given but shown redacted by ``repr``.
- :func:`describe_errors`: the message of an invalid config, one line per wrong key
  with its value, secrets shown as ``<secret>`` and URLs redacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

__all__ = ["RpcUrl", "describe_errors", "redact_url", "redact_urls_in"]


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


_SECRET_FIELDS = frozenset(
    {"url", "hd_mnemonic", "session_secret", "relayer_key", "gas_tank_key", "webhook_key"}
)
_URL_FIELDS = frozenset({"rpc_urls", "verify_rpc_urls"})


def describe_errors(exc: ValidationError, data: Mapping[str, Any], path: Path) -> str:
    """One line per error of ``exc`` about ``data``, the config read from ``path``."""
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
