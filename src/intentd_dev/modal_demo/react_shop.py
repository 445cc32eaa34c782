"""The demo shop's React page (``clients/react/example/shop.tsx``, with @intentd/react):
built with esbuild through ``clients/react/scripts/bundle.mjs``, from the package's
sources against the React that ``make install`` put in ``node_modules``.

The build needs Node.js and the npm packages; without them the demo runs without its
React page (``/react`` says why). The browser tests build the same page from the packed
package against React 18 and 19 instead (``tests/react_package.py``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = ["EXAMPLE", "build_react_shop"]

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "clients" / "react" / "example" / "shop.tsx"
BUNDLE = ROOT / "clients" / "react" / "scripts" / "bundle.mjs"


def build_react_shop(out: Path) -> Path | None:
    """Build the page's script into ``out/shop.js``; ``out``, or None with the reason
    printed when it cannot be built (no Node.js, no ``npm ci``, a build error)."""
    node = shutil.which("node")
    if node is None or not BUNDLE.is_file() or not (ROOT / "node_modules" / "esbuild").is_dir():
        print("the React shop is not built: it needs Node.js and `make install`", flush=True)
        return None
    done = subprocess.run(
        [node, str(BUNDLE), "--entry", str(EXAMPLE), "--outfile", str(out / "shop.js")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        print(f"the React shop did not build:\n{done.stderr[-2000:]}", flush=True)
        return None
    return out
