"""@intentd/react as published: ``npm pack`` builds it from the sources and packs the
build alone; its pure parts (node --test); it imports and renders on a server (Node,
no DOM) under React 18 and 19; its declarations type-check a merchant's code under
both Reacts' types; it is ESM without side effects, so a bundler keeps only what a page
uses, and its gzipped size stays within the budget; ``make modal-demo`` builds its React
page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.react_package import EXAMPLE, ROOT, Packed, bundle, packed_once, resolve_from, run

from intentd_dev.modal_demo.react_shop import build_react_shop

HERE = ROOT / "tests" / "react"
BUDGET_GZIP = 4 * 1024
"""The whole package minified and gzipped (React left out), in bytes."""


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Packed:
    return packed_once(tmp_path_factory)


def test_the_tarball_holds_the_build_and_nothing_else(packed: Packed) -> None:
    modules = ["PaymentModal", "checkout", "config", "index", "overlay", "session", "types"]
    modules += ["usePaymentModal", "usePaymentSession"]
    expected = {"README.md", "package.json"}
    expected |= {f"dist/{m}.{ext}" for m in modules for ext in ("js", "d.ts")}
    assert set(packed.files) == expected
    manifest = json.loads((packed.installed / "package.json").read_text())
    assert manifest["name"] == "@intentd/react"
    assert manifest["type"] == "module"
    assert manifest["sideEffects"] is False
    assert manifest["exports"]["."]["types"] == "./dist/index.d.ts"
    assert manifest["peerDependencies"] == {"react": "^18.0.0 || ^19.0.0"}
    assert "dependencies" not in manifest  # no wallet library, nothing at all


def test_the_pure_parts(packed: Packed) -> None:
    test = packed.project / "pure.test.mjs"
    shutil.copy(HERE / "pure.test.mjs", test)
    output = run(["node", "--test", str(test)], packed.project)
    assert "# fail 0" in output and "# pass 8" in output, output


@pytest.mark.parametrize("react", ["18", "19"])
def test_it_renders_on_a_server_without_a_dom(packed: Packed, react: str, tmp_path: Path) -> None:
    if react == "19":  # the package as Node itself resolves and imports it, unbundled
        probe = packed.project / "ssr.mjs"
        shutil.copy(HERE / "ssr.mjs", probe)
    else:  # React 18: one bundle with the package and React 18's server renderer
        probe = tmp_path / "ssr.mjs"
        figures = bundle(packed, HERE / "ssr.mjs", probe, react=react, platform="node")
        assert figures["react"].startswith("18.")
    out = json.loads(run(["node", str(probe)], packed.project))
    assert out["react"].startswith(f"{react}.")
    assert out["window"] == "undefined"
    assert out["html"] == '<main><button type="button">Pay 3 USDC</button></main>'


@pytest.mark.parametrize("react", ["18", "19"])
def test_the_declarations_type_check_a_merchants_code(
    packed: Packed, react: str, tmp_path: Path
) -> None:
    types = resolve_from(react, "@types/react")
    dom_types = resolve_from(react, "@types/react-dom")
    assert json.loads((types / "package.json").read_text())["version"].startswith(f"{react}.")
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "jsx": "react-jsx",
            "target": "ES2020",
            "module": "ESNext",
            "moduleResolution": "Bundler",
            "lib": ["ES2020", "DOM"],
            "types": [],
            "paths": {
                "react": [str(types)],
                "react/*": [f"{types}/*"],
                "react-dom": [str(dom_types)],
                "react-dom/*": [f"{dom_types}/*"],
                "@intentd/react": [str(packed.installed)],
            },
        },
        "files": [str(HERE / "consumer.tsx"), str(EXAMPLE)],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    run([str(ROOT / "node_modules" / ".bin" / "tsc"), "-p", str(tmp_path)], tmp_path)


def test_size_and_tree_shaking(packed: Packed, tmp_path: Path) -> None:
    everything = tmp_path / "all.ts"
    everything.write_text('export * from "@intentd/react";\n')
    whole = bundle(packed, everything, tmp_path / "all.js", react_external=True)
    print(f"\n@intentd/react, minified: {whole['bytes']} bytes, gzipped: {whole['gzip']} bytes")
    assert whole["gzip"] <= BUDGET_GZIP, whole
    one = tmp_path / "one.ts"
    one.write_text('import { usePaymentModal as use } from "@intentd/react";\nconsole.log(use);\n')
    hook = bundle(packed, one, tmp_path / "one.js", react_external=True)
    print(f"usePaymentModal alone, gzipped: {hook['gzip']} bytes")
    kept = (tmp_path / "one.js").read_text()
    assert "attachShadow" not in kept and "intentd-pay" not in kept  # no modal, no protocol
    assert hook["gzip"] * 4 < whole["gzip"]


def test_the_demo_shop_builds_its_react_page(tmp_path: Path) -> None:
    """``make modal-demo``'s React page, built from the package's sources."""
    built = build_react_shop(tmp_path)
    assert built == tmp_path
    script = (tmp_path / "shop.js").read_text()
    assert "Demo shop, in React" in script and "intentd-pay" in script
