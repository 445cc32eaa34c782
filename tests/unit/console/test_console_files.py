"""The console's browser files: the gzip budget, the strict CSP they need (no inline
script or style, nothing from another origin), every string in the one table, and the
headers of every answer under /console."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from tests.unit.pay.test_pay_routes import get

from intentd.console.pages import CONTENT_SECURITY_POLICY, STATIC, ConsoleHeaders, pages_router
from intentd.console.waiting import Reason
from intentd.pay.routes import STATIC as PAY_STATIC
from intentd.reports.movements import Export
from intentd.reports.streams import LEDGER_FIELDS

BUDGET = 100 * 1024
SCRIPTS = sorted(STATIC.glob("*.js"))


def _gz(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))


def test_the_javascript_and_css_fit_the_gzip_budget() -> None:
    files = [*SCRIPTS, *STATIC.glob("*.css"), PAY_STATIC / "qr.js"]  # qr.js: the TOTP setup
    total = sum(_gz(f) for f in files)
    print(f"\nconsole JS+CSS: {total / 1024:.1f} KiB gzipped ({len(files)} files)")
    assert total < BUDGET


def test_no_inline_script_or_style_and_nothing_from_elsewhere() -> None:
    page = (STATIC / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)
    assert "<style" not in page
    assert not re.search(r"\sstyle=", page)
    assert not re.search(r"\son[a-z]+=", page)
    for path in [STATIC / "index.html", *SCRIPTS, *STATIC.glob("*.css")]:
        text = path.read_text()
        loads = (
            r"(?:import\s*\(?\s*['\"]|from\s+['\"]|src=['\"]|href=['\"]|url\(\s*['\"]?)"
            r"(?:https?:)?//"
        )
        assert not re.search(loads, text), path.name  # no CDN: everything from 'self'
        assert ".innerHTML" not in text and "insertAdjacentHTML" not in text, path.name
        assert "setAttribute('style'" not in text and ".style." not in text, path.name
        assert "eval(" not in text and "new Function" not in text, path.name
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY


def _strings() -> str:
    return (STATIC / "strings.js").read_text()


def _table() -> dict[str, Any]:
    """strings.js's table, read as data: its comments dropped, its quoted strings and
    its keys turned into JSON's (one pass, so a string's own words are never keys)."""
    text = re.sub(r"^\s*//.*$", "", _strings(), flags=re.M)
    body = text[text.index("{") : text.rindex("}") + 1]

    def quoted(match: re.Match[str]) -> str:
        string, key = match.groups()
        return json.dumps(string if string is not None else key)

    body = re.sub(r"'((?:[^'\\]|\\.)*)'|\b(\w+)(?=\s*:)", quoted, body)
    table: dict[str, Any] = json.loads(re.sub(r",(\s*[}\]])", r"\1", body))["en"]
    return table


def test_every_string_the_pages_use_is_in_the_table() -> None:
    """Every ``t('a.b.c')`` of the pages names a string of the table, to its last part
    (a missing one would show the key itself on the page)."""
    table = _table()
    missing = []
    for path in SCRIPTS:
        if path.name == "strings.js":
            continue
        for key in re.findall(r"\bt\('([\w.]+)'", path.read_text()):
            node: Any = table
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if not isinstance(node, str):
                missing.append(f"{path.name}: {key}")
    assert missing == []


def test_every_export_and_ledger_figure_of_the_reports_has_its_words() -> None:
    reports = _table()["reports"]
    assert set(reports["exports"]) == set(reports["exportText"]) == {e.value for e in Export}
    assert tuple(reports["ledger"]) == LEDGER_FIELDS


def test_every_reason_a_payment_waits_has_its_sentence() -> None:
    reasons = re.search(r"reasons: \{(.*?)\n    \},", _strings(), re.S)
    assert reasons is not None
    worded = set(re.findall(r"^\s+(\w+):", reasons.group(1), re.M))
    assert worded == {r.value for r in Reason}


@pytest.fixture
def pages() -> Any:
    app = FastAPI()
    app.include_router(pages_router())
    app.add_middleware(ConsoleHeaders)
    return app


async def test_every_page_path_serves_the_shell_with_the_headers(pages: Any) -> None:
    for path in ("/console", "/console/payments", "/console/payments/12", "/console/signin"):
        status, headers, body = await get(pages, path)
        assert status == 200
        assert b'<div id="app"' in body
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
    assert (await get(pages, "/console/api/nothing"))[0] == 404


async def test_assets_are_gzipped_and_revalidated(pages: Any) -> None:
    status, headers, body = await get(
        pages, "/console/assets/app.js", [(b"accept-encoding", b"gzip, br")]
    )
    assert status == 200
    assert headers["content-encoding"] == "gzip"
    assert headers["content-type"].startswith("text/javascript")
    assert gzip.decompress(body) == (STATIC / "app.js").read_bytes()
    status, _, _ = await get(
        pages, "/console/assets/app.js", [(b"if-none-match", headers["etag"].encode())]
    )
    assert status == 304
    assert (await get(pages, "/console/assets/nothing.js"))[0] == 404
