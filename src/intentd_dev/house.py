"""The shape of the house in figures: ``python -m intentd_dev.house [CHECKOUT]``.

Prints, for the checkout given (default: this one), what issue 19 measured: the modules
of each package, the modules over the size limit, the ports (``Protocol`` classes) by
their number of methods, the layers of the import contract, and the import lines into
the indexer from outside it. Run it on an older checkout (``git worktree add /tmp/old
REV``) to compare. Reads files only; imports nothing of the checkout.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

MODULE_LIMIT = 350
PORT_LIMIT = 10


def modules(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*.py") if "migrations" not in p.parts)


def per_package(src: Path) -> Counter[str]:
    """Modules directly in each top-level package (its sub-packages counted apart)."""
    counts: Counter[str] = Counter()
    for path in modules(src):
        parent = path.parent.relative_to(src).as_posix()
        counts[parent if parent != "." else "(root)"] += 1
    return counts


def ports(src: Path) -> list[tuple[int, str]]:
    found = []
    for path in modules(src):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(_is_protocol(b) for b in node.bases):
                methods = [
                    f for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                found.append((len(methods), f"{path.relative_to(src)}:{node.name}"))
    return sorted(found, reverse=True)


def _is_protocol(base: ast.expr) -> bool:
    if isinstance(base, ast.Subscript):
        base = base.value
    return (isinstance(base, ast.Name) and base.id == "Protocol") or (
        isinstance(base, ast.Attribute) and base.attr == "Protocol"
    )


def layers(checkout: Path) -> list[str]:
    config = tomllib.loads((checkout / "pyproject.toml").read_text())
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract.get("id") == "layers":
            return list(contract["layers"])
    return []


def into_indexer(src: Path) -> int:
    pattern = re.compile(r"^\s*(from intentd\.indexer|import intentd\.indexer)", re.M)
    return sum(
        len(pattern.findall(p.read_text()))
        for p in modules(src)
        if "indexer" not in p.relative_to(src).parts[:1]
    )


def main(argv: list[str]) -> None:
    checkout = Path(argv[0] if argv else ".").resolve()
    src = checkout / "src" / "intentd"
    counts = per_package(src)
    print(f"{checkout}: {len(modules(src))} modules")
    print("modules per package (largest first):")
    for package, count in counts.most_common(12):
        print(f"  {count:3d}  {package}")
    big = [(len(p.read_text().splitlines()), p) for p in modules(src)]
    over = sorted(((n, p) for n, p in big if n > MODULE_LIMIT), reverse=True)
    print(f"modules over {MODULE_LIMIT} lines: {len(over)}")
    for lines, path in over:
        print(f"  {lines:4d}  {path.relative_to(src)}")
    found = ports(src)
    print(f"ports over {PORT_LIMIT} methods: {sum(1 for n, _ in found if n > PORT_LIMIT)}")
    for count, name in found[:5]:
        print(f"  {count:3d}  {name}")
    stack = layers(checkout)
    print(f"layers in the import contract: {len(stack)}")
    print(f"import lines into intentd.indexer from outside it: {into_indexer(src)}")


if __name__ == "__main__":
    main(sys.argv[1:])
