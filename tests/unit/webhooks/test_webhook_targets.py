"""SSRF rules: which URLs and addresses a webhook may go to."""

from __future__ import annotations

import pytest

from intentd.webhooks.targets import TargetRefused, check_url, refusal


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local (cloud metadata)"),
        ("fe80::1", "link-local (cloud metadata)"),
        ("100.64.0.1", "CGNAT"),
        ("0.0.0.0", "special-purpose"),  # noqa: S104
        ("224.0.0.1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
        ("64:ff9b::a00:1", "private"),
        ("2002:7f00:1::", "loopback"),
    ],
)
def test_internal_addresses_are_refused(address: str, why: str) -> None:
    assert refusal(address) == why


@pytest.mark.parametrize(
    "address",
    [
        "fec0::1",  # site-local (RFC 3879, deprecated, still routed inside some networks)
        "feff:ffff::1",  # the top of fec0::/10
        "fd00:ec2::254",  # the AWS metadata service over IPv6 (unique-local)
        "fc00::1",
        "::ffff:10.0.0.1",  # IPv4-mapped
        "::ffff:0:10.0.0.1",  # IPv4-translated (::ffff:0:0/96, SIIT)
        "::ffff:0:8.8.8.8",
        "::10.0.0.1",  # IPv4-compatible (deprecated)
        "::8.8.8.8",
        "64:ff9b::10.0.0.1",  # NAT64 to private IPv4
        "64:ff9b::169.254.169.254",
        "64:ff9b::192.0.0.8",
        "64:ff9b:1::8.8.8.8",  # local-use NAT64 (RFC 8215)
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
        "2002:c000:8::",  # 6to4 of 192.0.0.8
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "2001:db8::1",  # documentation
        "3fff::1",  # documentation (RFC 9637)
        "5f00::1",  # SRv6 SIDs
        "100::1",  # discard-only
        "100.64.0.1",
        "100.127.255.254",
        "0.1.2.3",
        "192.0.0.8",  # IETF protocol assignments (192.0.0.0/24)
        "192.0.0.170",
        "192.0.2.1",
        "192.88.99.1",  # deprecated 6to4 relay anycast
        "198.18.0.1",
        "198.51.100.1",
        "203.0.113.1",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "ff02::1",
        "ff0e::1",
        "fe80::1%eth0",
        "febf:ffff::1",  # the top of fe80::/10
        "169.254.0.1",
        "::",
    ],
)
def test_special_purpose_ranges_and_their_ipv6_forms_are_refused(address: str) -> None:
    assert refusal(address) is not None, address


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "2606:4700::6810:85e5",
        "8.8.8.8",
        "::ffff:8.8.8.8",  # mapped public IPv4
        "64:ff9b::8.8.8.8",  # NAT64 to public IPv4
        "2002:808:808::1",  # 6to4 of public IPv4
        "100.128.0.1",  # just past CGNAT
        "100.63.255.255",  # just before CGNAT
        "192.0.1.1",
    ],
)
def test_public_addresses_pass(address: str) -> None:
    assert refusal(address) is None


@pytest.mark.parametrize(
    ("url", "mode", "code"),
    [
        ("http://example.com/hook", "live", "webhook_url_not_https"),
        ("ftp://example.com/hook", "test", "webhook_url_invalid"),
        ("https://user:pw@example.com/", "test", "webhook_url_invalid"),
        ("https://127.0.0.1/", "test", "webhook_url_forbidden"),
        ("https://[::1]:8443/", "test", "webhook_url_forbidden"),
        ("https://169.254.169.254/latest", "live", "webhook_url_forbidden"),
        ("https://[fec0::1]/", "live", "webhook_url_forbidden"),
        ("https://[::ffff:0:a00:1]/", "live", "webhook_url_forbidden"),
        ("https://[64:ff9b::a9fe:a9fe]/latest", "live", "webhook_url_forbidden"),
        ("https://[2002:a9fe:a9fe::1]/latest", "live", "webhook_url_forbidden"),
        ("https://localhost/", "test", "webhook_url_forbidden"),
        ("https://metadata.google.internal/", "live", "webhook_url_forbidden"),
        ("https:///nohost", "test", "webhook_url_invalid"),
        ("https://example.com:99999/", "test", "webhook_url_invalid"),
    ],
)
def test_refused_urls_say_why(url: str, mode: str, code: str) -> None:
    with pytest.raises(TargetRefused) as refused:
        check_url(url, mode, allow_private=False)  # type: ignore[arg-type]
    assert refused.value.code == code


def test_allow_private_lifts_address_rules_not_https() -> None:
    target = check_url("http://127.0.0.1:8080/h", "test", allow_private=True)
    assert (target.host, target.port, str(target.literal)) == ("127.0.0.1", 8080, "127.0.0.1")
    with pytest.raises(TargetRefused):
        check_url("http://127.0.0.1:8080/h", "live", allow_private=True)
    assert check_url("https://Example.COM./x", "live", allow_private=False).host == "example.com"
