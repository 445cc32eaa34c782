"""The checkout's pure browser code, run under Node: the QR encoder's symbols decode
(with zxing-cpp, an independent decoder) to the text given, at every version it
makes; amounts, EIP-681 URIs and the payer's status messages are right."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import zxingcpp

from intentd.pay.routes import STATIC

NODE = shutil.which("node")


def run_module(tmp_path: Path, body: str) -> Any:
    """Run ``body`` as an ES module beside the static files' imports; its JSON output."""
    script = tmp_path / "probe.mjs"
    script.write_text(
        f"import * as qr from '{(STATIC / 'qr.js').as_uri()}';\n"
        f"import * as pay from '{(STATIC / 'payment.js').as_uri()}';\n"
        f"const out = await (async () => {{ {body} }})();\n"
        "console.log(JSON.stringify(out));\n"
    )
    if NODE is None:
        pytest.fail("Node.js is missing (README: Node.js 20+)", pytrace=False)
    result = subprocess.run(
        [NODE, "--no-warnings", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def decode(rows: list[str], scale: int = 4, quiet: int = 4) -> Any:
    size = len(rows)
    width = (size + 2 * quiet) * scale
    pixels = bytearray(b"\xff") * (width * width)
    for y, row in enumerate(rows):
        for x, module in enumerate(row):
            if module == "1":
                for dy in range(scale):
                    start = ((y + quiet) * scale + dy) * width + (x + quiet) * scale
                    pixels[start : start + scale] = b"\x00" * scale
    return zxingcpp.read_barcode(memoryview(pixels).cast("B", (width, width)))


URI = (
    "ethereum:0x5FbDB2315678afecb367f032d93F642f64180aa3@421614/transfer"
    "?address=0x70997970C51812dc3A010C7d01b50e0d17dc79C8&uint256=123456789012345678"
)
TEXTS = ["a", "x" * 30, "y" * 60, URI, "ethereum:0xAbC@1?value=1", "é€😀" * 12, "z" * 213]


def test_every_symbol_decodes_to_its_text_at_level_m(tmp_path: Path) -> None:
    symbols = run_module(
        tmp_path,
        f"return {json.dumps(TEXTS)}.map((t) => {{ const q = qr.encodeQr(t);"
        " const rows = []; for (let y = 0; y < q.size; y++) { let r = '';"
        " for (let x = 0; x < q.size; x++) r += q.dark(x, y) ? '1' : '0'; rows.push(r); }"
        " return { version: q.version, rows }; });",
    )
    versions = set()
    for text, symbol in zip(TEXTS, symbols, strict=True):
        found = decode(symbol["rows"])
        assert found is not None, (text, symbol["version"])
        assert found.text == text
        assert found.ec_level == "M"
        assert len(symbol["rows"]) == 17 + 4 * symbol["version"]
        versions.add(symbol["version"])
    assert {1, 10} <= versions and any(v >= 7 for v in versions)  # version info blocks too


def test_each_mask_makes_a_valid_symbol(tmp_path: Path) -> None:
    symbols = run_module(
        tmp_path,
        "return [0,1,2,3,4,5,6,7].map((m) => { const q = qr.encodeQr("
        f"{json.dumps(URI)}, {{ mask: m }}); const rows = [];"
        " for (let y = 0; y < q.size; y++) { let r = '';"
        " for (let x = 0; x < q.size; x++) r += q.dark(x, y) ? '1' : '0'; rows.push(r); }"
        " return rows; });",
    )
    for rows in symbols:
        found = decode(rows)
        assert found is not None and found.text == URI


def test_too_long_a_text_is_refused(tmp_path: Path) -> None:
    out = run_module(
        tmp_path,
        "try { qr.encodeQr('x'.repeat(214)); return 'made'; } catch (e) { return e.name; }",
    )
    assert out == "RangeError"


def test_amounts_uris_and_statuses(tmp_path: Path) -> None:
    out = run_module(
        tmp_path,
        """
        const intent = (status, received, total = '3.003') => ({
          intent_status: status, amount_received: received, total_amount_in_asset_token: total,
          asset_token_decimals: 6, asset_token_symbol: 'USDC', refund_address: '0xR' });
        return {
          units: [pay.toUnits('12.5', 6).toString(), pay.toUnits('0.000001', 6).toString(),
                  pay.toUnits('1.0000001', 6), pay.toUnits('1e3', 6),
                  pay.toUnits('7', 0).toString()],
          text: [pay.fromUnits(12500000n, 6), pay.fromUnits(1n, 6), pay.fromUnits(0n, 6),
                 pay.fromUnits(5n, 0)],
          erc20: pay.paymentUri({ token: '0xT', to: '0xA', chainId: 84532, units: '10' }),
          native: pay.paymentUri({ token: pay.NATIVE, to: '0xA', chainId: 1, units: '20' }),
          statuses: [
            pay.intentStatus(intent('PENDING', '0')),
            pay.intentStatus(intent('PENDING', '1')),
            pay.intentStatus(intent('FUNDED', '3.003')),
            pay.intentStatus(intent('FUNDED', '4')),
            pay.intentStatus(intent('INITIATED', '3.003')),
            pay.intentStatus(intent('COMPLETED', '3.003')),
            pay.intentStatus(intent('EXPIRED', '0')),
            pay.intentStatus(intent('REFUNDING', '1')),
            pay.intentStatus(intent('CANCELLED', '0')),
          ].map((s) => [s.key, s.end, s.values.missing ?? s.values.excess ?? null]),
          clock: [pay.clock(0), pay.clock(61.9), pay.clock(3725), pay.clock(-5)],
        };
        """,
    )
    assert out["units"] == ["12500000", "1", None, None, "7"]
    assert out["text"] == ["12.5", "0.000001", "0", "5"]
    assert out["erc20"] == "ethereum:0xT@84532/transfer?address=0xA&uint256=10"
    assert out["native"] == "ethereum:0xA@1?value=20"
    assert out["statuses"] == [
        ["statusWaiting", None, None],
        ["statusPartial", None, "2.003"],
        ["statusFunded", None, None],
        ["statusOver", None, "0.997"],
        ["statusSent", None, None],
        ["statusDone", "done", None],
        ["statusWaiting", "expired", None],
        ["statusRefunding", "refund", None],
        ["statusWaiting", "cancelled", None],
    ]
    assert out["clock"] == ["0:00", "1:01", "1:02:05", "0:00"]


def test_every_text_is_in_the_strings_table(tmp_path: Path) -> None:
    """Each ``T.name`` and ``say('name')`` of the checkout names an entry of the table."""
    import re

    source = "\n".join((STATIC / n).read_text() for n in ("checkout.js", "view.js"))
    used = set(re.findall(r"\bT\.(\w+)", source)) | set(re.findall(r"say\('(\w+)'", source))
    used |= set(re.findall(r"'(status\w+|optionTitle|optionDetail|heading\w+)'", source))
    keys = run_module(
        tmp_path,
        f"const s = await import('{(STATIC / 'strings.js').as_uri()}');"
        " return Object.keys(s.STRINGS.en);",
    )
    assert used and used <= set(keys), used - set(keys)
