"""What intentd serves under ``/pay``: the modal's two script forms, the checkout page
and its assets, each with the Content-Security-Policy; the modal's size budget."""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest

from intentd.api.app import create_app
from intentd.pay.routes import ASSETS, content_security_policy, modal_scripts
from intentd.settings import Settings

SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": {"A_TESTNET": {"chain_id": 1001, "network": "test", "rpc_urls": ["http://x"]}},
    }
)
BUDGET = 50 * 1024


async def get(
    app: Any, path: str, headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One GET through the ASGI app (no server, no lifespan: /pay needs no services)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"intentd.test"), *(headers or [])],
        "client": ("127.0.0.1", 1),
        "server": ("intentd.test", 80),
        "app": app,
    }
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body


@pytest.fixture(scope="module")
def app() -> Any:
    return create_app(SETTINGS)


@pytest.mark.parametrize(
    ("path", "media"),
    [
        ("/pay/modal.js", "text/javascript"),
        ("/pay/pay.js", "text/javascript"),
        ("/pay/checkout", "text/html"),
        ("/pay/config.json", "application/json"),
        *((f"/pay/assets/{name}", "text/") for name in ASSETS),
    ],
)
async def test_every_file_is_served_with_the_policy(app: Any, path: str, media: str) -> None:
    status, headers, body = await get(app, path)
    assert status == 200 and body
    assert headers["content-type"].startswith(media)
    assert headers["content-security-policy"] == content_security_policy([])
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


async def test_browsers_revalidate_every_file_by_its_etag(app: Any) -> None:
    for path in ("/pay/modal.js", "/pay/checkout", "/pay/assets/checkout.js"):
        status, headers, body = await get(app, path)
        assert status == 200 and headers["cache-control"] == "no-cache"
        tag = headers["etag"]
        status, again, body = await get(app, path, [(b"if-none-match", tag.encode())])
        assert (status, body, again["etag"]) == (304, b"", tag)
        status, _, body = await get(app, path, [(b"if-none-match", b'"other"')])
        assert status == 200 and body


async def test_an_unknown_file_is_404_with_the_policy_too(app: Any) -> None:
    for path in ("/pay/assets/secret.py", "/pay/nothing"):
        status, headers, _ = await get(app, path)
        assert status == 404
        assert "script-src 'self'" in headers["content-security-policy"]


async def test_the_api_is_left_alone(app: Any) -> None:
    _, headers, _ = await get(app, "/api/v1/openapi.json")
    assert "content-security-policy" not in headers


def test_the_policy_allows_no_inline_code_and_names_the_embedders() -> None:
    policy = content_security_policy(["https://shop.example"])
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy
    assert "style-src 'self';" in policy
    assert policy.endswith("frame-ancestors https://shop.example")
    assert content_security_policy([]).endswith("frame-ancestors 'self'")


async def test_without_cors_origins_only_intentd_itself_may_frame_the_checkout(app: Any) -> None:
    """Issue 18 item 5: ``api.cors_origins`` empty (the default) is not "every site"."""
    for path in ("/pay/checkout", "/pay/assets/checkout.js", "/pay/nothing"):
        _, headers, _ = await get(app, path)
        policy = headers["content-security-policy"]
        assert policy.endswith("; frame-ancestors 'self'"), policy
        assert "*" not in policy


async def test_cors_origins_are_the_sites_that_may_frame_the_checkout() -> None:
    settings = SETTINGS.model_copy(
        update={"api": SETTINGS.api.model_copy(update={"cors_origins": ["https://shop.example"]})}
    )
    _, headers, _ = await get(create_app(settings), "/pay/checkout")
    assert headers["content-security-policy"].endswith("; frame-ancestors https://shop.example")


async def test_the_modal_scripts_may_be_loaded_from_any_site(app: Any) -> None:
    for path in ("/pay/modal.js", "/pay/pay.js"):
        _, headers, _ = await get(app, path)
        assert headers["access-control-allow-origin"] == "*"
        assert headers["cross-origin-resource-policy"] == "cross-origin"


async def test_the_checkout_page_has_no_inline_script_or_style(app: Any) -> None:
    _, _, page = await get(app, "/pay/checkout")
    text = page.decode()
    assert '<script type="module" src="assets/checkout.js"></script>' in text
    assert text.count("<script") == 1 and "<style" not in text and "style=" not in text


async def test_config_names_each_chain_id_and_network(app: Any) -> None:
    _, _, body = await get(app, "/pay/config.json")
    chains = orjson.loads(body)["chains"]
    assert chains == {"A_TESTNET": {"chain_id": 1001, "network": "test", "native_symbol": "ETH"}}


def test_the_two_script_forms_come_from_one_source() -> None:
    scripts = modal_scripts()
    assert scripts["modal.js"].rstrip().endswith(b"export default openPayment;")
    assert b"window.IntentdPay" in scripts["pay.js"]
    assert not any(line.startswith(b"export") for line in scripts["pay.js"].splitlines())


def test_the_modal_and_the_whole_checkout_stay_under_50_kb_gzipped() -> None:
    scripts = modal_scripts()
    modal = len(gzip.compress(scripts["modal.js"], 9))
    from intentd.pay.routes import STATIC

    checkout = sum(
        len(gzip.compress((STATIC / name).read_bytes(), 9)) for name in (*ASSETS, "checkout.html")
    )
    assert modal < BUDGET, modal
    # Everything a payer's browser loads for the modal: the script and the whole frame.
    assert modal + checkout < BUDGET, modal + checkout
