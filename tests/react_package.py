"""@intentd/react (``clients/react``) as its tests use it: packed with ``npm pack`` as a
publisher would (its ``prepack`` builds ``dist/`` from the TypeScript sources, so this
works on a fresh clone after ``make install``), unpacked into a folder of the test's as
an installed package, and bundled with esbuild against React 18 or 19 (each installed by
``npm ci`` as a workspace of its own: ``tests/react/react18``, ``tests/react/react19``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "react"
BUNDLE = PACKAGE / "scripts" / "bundle.mjs"
EXAMPLE = PACKAGE / "example" / "shop.tsx"
REACT = {"18": ROOT / "tests" / "react" / "react18", "19": ROOT / "tests" / "react" / "react19"}
"""Where each React version (and its types) resolves from."""
NODE = shutil.which("node")
NPM = shutil.which("npm")


@dataclass(frozen=True)
class Packed:
    tarball: Path
    files: list[str]
    """The tarball's files, relative to its ``package/`` folder."""
    project: Path
    """A folder whose ``node_modules/@intentd/react`` is the unpacked tarball (and
    ``react`` and ``react-dom`` beside it, React 19)."""

    @property
    def installed(self) -> Path:
        return self.project / "node_modules" / "@intentd" / "react"


def run(args: list[str], cwd: Path, timeout: float = 120) -> str:
    """Run a command; its stdout. Fails the test with its stderr if it fails."""
    done = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _tools() -> tuple[str, str]:
    if NODE is None or NPM is None:
        pytest.fail("Node.js and npm are missing (README: Node.js 20+)", pytrace=False)
    if not (ROOT / "node_modules" / "typescript").is_dir():
        pytest.fail("the npm packages are missing: run `make install`", pytrace=False)
    return NODE, NPM


def resolve_from(react: str, module: str) -> Path:
    """The folder of ``module`` (a package name) as Node resolves it from React ``react``'s
    workspace: its own ``node_modules`` when npm nested it there, else the root's."""
    node, _ = _tools()
    found = run(
        [node, "-p", f"path.dirname(require.resolve({json.dumps(module + '/package.json')}))"],
        REACT[react],
    )
    return Path(found.strip())


def pack(where: Path) -> Packed:
    """``npm pack`` of the package into ``where``, unpacked as an installed package."""
    node, npm = _tools()
    where.mkdir(parents=True, exist_ok=True)
    answer = json.loads(run([npm, "pack", "--json", "--pack-destination", str(where)], PACKAGE))
    tarball = where / answer[0]["filename"]
    files = sorted(f["path"] for f in answer[0]["files"])
    project = where / "project"
    installed = project / "node_modules" / "@intentd" / "react"
    installed.mkdir(parents=True)
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            assert member.name.startswith("package/") and member.isfile(), member.name
            member.name = member.name.removeprefix("package/")
            archive.extract(member, installed, filter="data")
    for name in ("react", "react-dom"):
        (project / "node_modules" / name).symlink_to(resolve_from("19", name))
    assert node
    return Packed(tarball, files, project)


_PACKED: list[Packed] = []


def packed_once(tmp_path_factory: pytest.TempPathFactory) -> Packed:
    """The package packed once per test session (each module's fixture asks for it)."""
    if not _PACKED:
        _PACKED.append(pack(tmp_path_factory.mktemp("react-pack")))
    return _PACKED[0]


def bundle(
    packed: Packed,
    entry: Path,
    outfile: Path,
    *,
    react: str = "19",
    platform: str = "browser",
    react_external: bool = False,
) -> dict[str, Any]:
    """Bundle ``entry`` (which imports ``@intentd/react``: the packed one) with esbuild;
    ``bundle.mjs``'s figures (React version, bytes, gzip)."""
    node, _ = _tools()
    args = [
        node,
        str(BUNDLE),
        "--entry",
        str(entry),
        "--outfile",
        str(outfile),
        "--from",
        str(packed.project),
        "--react",
        str(REACT[react]),
        "--platform",
        platform,
    ]
    if react_external:
        args.append("--react-external")
    figures: dict[str, Any] = json.loads(run(args, ROOT))
    return figures
