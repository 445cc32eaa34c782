"""Which URLs and addresses a webhook may be sent to (pure): no SSRF.

:func:`check_url` is applied at registration and before each send; :func:`refusal`
is applied to every address a name resolves to, at registration and again at
connect time on the addresses the connection is actually made to (the role's
resolver, :mod:`intentd.adapters.http.webhook_sender`), so a name that changes its address between
the check and the connection (DNS rebinding) is still refused.

Refused (:func:`refusal`), by an explicit table of the IANA special-purpose
registries, so the rule does not move with the Python version's ``ipaddress``:

- IPv4: ``0.0.0.0/8``, loopback ``127/8``, private (RFC 1918), CGNAT ``100.64/10``,
  link-local ``169.254/16`` (the cloud metadata service), ``192.0.0.0/24`` (IETF
  protocol assignments), the documentation and benchmarking ranges, the deprecated
  6to4 relay ``192.88.99/24``, multicast ``224/4``, reserved ``240/4`` and broadcast;
- IPv6: ``::`` and ``::1``, IPv4-compatible ``::/96`` and IPv4-translated
  ``::ffff:0:0:0/96``, local-use NAT64 ``64:ff9b:1::/48``, discard ``100::/64``,
  ``2001::/23`` (Teredo, ORCHID, ...), documentation ``2001:db8::/32`` and
  ``3fff::/20``, SRv6 ``5f00::/16``, unique-local ``fc00::/7`` (AWS's metadata
  service ``fd00:ec2::254``), link-local ``fe80::/10``, site-local ``fec0::/10``,
  multicast ``ff00::/8``;
- an IPv4 address inside IPv6 is judged as that IPv4 address: IPv4-mapped
  (``::ffff:a.b.c.d``), NAT64 (``64:ff9b::a.b.c.d``) and 6to4 (``2002:AABB:CCDD::``);
- anything Python's ``ipaddress`` does not call global, as a backstop;
- the names ``localhost``, ``*.localhost``, ``*.local``, ``*.internal`` and the
  metadata names of the big clouds.

A live endpoint must be ``https``. ``allow_private`` (setting
``webhooks.allow_private_targets``, development and tests only) lifts the address
rules, never the scheme rule.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from intentd.contract.mode import Mode

__all__ = ["Target", "TargetRefused", "check_url", "refusal"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _table(*rows: tuple[str, str]) -> tuple[tuple[Network, str], ...]:
    return tuple((ipaddress.ip_network(net), why) for net, why in rows)


_REFUSED = _table(
    ("0.0.0.0/8", "special-purpose"),  # "this network"
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "CGNAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "special-purpose"),  # IETF protocol assignments
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "special-purpose"),  # deprecated 6to4 relay anycast
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "special-purpose"),  # benchmarking
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # with 255.255.255.255
    ("::1/128", "loopback"),
    ("::/128", "special-purpose"),  # unspecified
    ("::/96", "special-purpose (IPv4-compatible)"),
    ("::ffff:0:0:0/96", "special-purpose (IPv4-translated)"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "special-purpose"),  # discard-only
    ("2001::/23", "special-purpose"),  # IETF protocol assignments: Teredo, ORCHID, ...
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "special-purpose"),  # SRv6 segment identifiers
    ("fc00::/7", "private"),  # unique-local
    ("fe80::/10", "link-local (cloud metadata)"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
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
    """Why ``address`` (an IP literal, possibly with a ``%zone``) may not be connected
    to, or None if it may."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return refusal(str(embedded))
    for network, why in _REFUSED:
        if ip.version == network.version and ip in network:
            return why
    if ip.is_multicast or ip.is_reserved or ip.is_private or not ip.is_global:
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
