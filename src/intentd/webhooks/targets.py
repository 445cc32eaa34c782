"""Which URLs and addresses a webhook may be sent to (pure): no SSRF.

:func:`check_url` is applied at registration and before each send; :func:`refusal`
is applied to every address a name resolves to, at registration and again at
connect time on the addresses the connection is actually made to (the role's
resolver, :mod:`intentd.adapters.webhook_http`), so a name that changes its address between
the check and the connection (DNS rebinding) is still refused.

Refused: loopback, private (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10,
which holds the cloud metadata service 169.254.169.254), CGNAT (100.64/10),
unspecified, multicast, reserved and the other special-purpose ranges, IPv4-mapped or
NAT64 forms of any of them, and the metadata names of the big clouds. A live endpoint
must be ``https``. ``allow_private`` (setting ``webhooks.allow_private_targets``,
development and tests only) lifts the address rules, never the scheme rule.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from intentd.webhooks.matching import Mode

__all__ = ["Target", "TargetRefused", "check_url", "refusal"]

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata", "metadata.azure.com", "instance-data"}
)
MAX_URL_LENGTH = 2048


class TargetRefused(ValueError):
    """A URL or address webhooks are not sent to; ``code`` is the API's problem code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Target:
    scheme: str
    host: str
    """Lower case, without brackets."""
    port: int
    literal: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    """The address when the host is a literal IP."""


def refusal(address: str) -> str | None:
    """Why ``address`` (an IP literal) may not be connected to, or None if it may."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            return refusal(str(mapped))
        if ip in _NAT64:
            return refusal(str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    if ip.is_unspecified:
        return "special-purpose"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local (cloud metadata)"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "CGNAT"
    if ip.is_private:
        return "private"
    if ip.is_multicast or ip.is_reserved or not ip.is_global:
        return "special-purpose"
    return None


def check_url(url: str, mode: Mode, *, allow_private: bool) -> Target:
    """The parsed target of ``url``; TargetRefused (with a problem code) if it may not
    be used by an endpoint of ``mode``."""
    if len(url) > MAX_URL_LENGTH:
        raise TargetRefused("webhook_url_invalid", f"the URL is longer than {MAX_URL_LENGTH}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused("webhook_url_invalid", f"the URL cannot be parsed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise TargetRefused("webhook_url_invalid", "the URL must be http or https")
    if mode == "live" and scheme != "https":
        raise TargetRefused("webhook_url_not_https", "a live endpoint must use https")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        raise TargetRefused("webhook_url_invalid", "the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("webhook_url_invalid", "the URL must not carry credentials")
    if parts.fragment:
        raise TargetRefused("webhook_url_invalid", "the URL must not have a fragment")
    literal = _literal(host)
    if not allow_private:
        _check_host(host, literal)
    return Target(scheme, host, port or (443 if scheme == "https" else 80), literal)


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _check_host(host: str, literal: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> None:
    if literal is not None:
        why = refusal(host)
        if why is not None:
            raise TargetRefused("webhook_url_forbidden", f"{host} is a {why} address")
    elif host == "localhost" or host.endswith((".localhost", ".internal", ".local")):
        raise TargetRefused("webhook_url_forbidden", f"{host} is a local name")
    elif host in _METADATA_NAMES:
        raise TargetRefused("webhook_url_forbidden", f"{host} is a cloud metadata name")
