"""The source address of a request, and the bucket it spends, for limits by address (pure).

The peer of the TCP connection is the source, unless it is one of the configured
``api.trusted_proxies``: then ``X-Forwarded-For`` is read from its right end, hop by
hop, while the hop it names was added by a trusted proxy; the first address not a
trusted proxy is the source. A client cannot choose its source by sending the
header itself: what it wrote is at the left, behind the proxies' own entries, and
a peer that is not a trusted proxy is never asked.

Limits key a source by :func:`source_bucket`: an IPv4 address, an IPv6 /64.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

__all__ = ["source_address", "source_bucket"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _trusted(address: str, proxies: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in proxies)


def source_address(
    peer: str | None, forwarded_for: Iterable[str], proxies: Sequence[Network]
) -> str | None:
    """The source of a request from ``peer`` with these ``X-Forwarded-For`` values."""
    if peer is None or not proxies or not _trusted(peer, proxies):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",")]
    source = peer
    for hop in reversed(hops):
        if not _trusted(source, proxies) or not hop:
            break
        source = hop
    return source


def source_bucket(source: str) -> str:
    """The bucket a source's unauthenticated requests spend (``api.source_rate_limit``):
    an IPv4 address is its own; an IPv4-mapped IPv6 address (``::ffff:a.b.c.d``, a
    dual-stack listener's view of an IPv4 client) is its IPv4 address's; any other
    IPv6 address is its /64 (``2001:db8:1:2::/64``): a host is given a whole /64 and
    may send from any address in it. A source that is not an address (as a peer or
    a proxy wrote it) is its own bucket, as given."""
    try:
        ip = ipaddress.ip_address(source)
    except ValueError:
        return source
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    bare = ipaddress.IPv6Address(int(ip))  # without a zone (fe80::1%eth0)
    return str(ipaddress.IPv6Network((bare, 64), strict=False))
