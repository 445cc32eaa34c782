"""The source address of a request, for limits by address (pure).

The peer of the TCP connection is the source, unless it is one of the configured
``api.trusted_proxies``: then ``X-Forwarded-For`` is read from its right end, hop by
hop, while the hop it names was added by a trusted proxy; the first address not a
trusted proxy is the source. A client cannot choose its source by sending the
header itself: what it wrote is at the left, behind the proxies' own entries, and
a peer that is not a trusted proxy is never asked.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

__all__ = ["source_address"]

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
