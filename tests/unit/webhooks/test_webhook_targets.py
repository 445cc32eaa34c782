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
        ("224.0.0.1", "special-purpose"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
        ("64:ff9b::a00:1", "private"),
        ("2002:7f00:1::", "loopback"),
    ],
)
def test_internal_addresses_are_refused(address: str, why: str) -> None:
    assert refusal(address) == why


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::6810:85e5", "8.8.8.8"])
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
