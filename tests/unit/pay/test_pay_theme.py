"""The checkout's theme (``static/theme.js``, under Node): a theme name outside the
three is light; only plain colours are taken as the accent (nothing that could load
or inject anything); the button text on an accent is whichever of black and white
contrasts more (WCAG 2 contrast ratios)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from intentd.pay.routes import ASSETS, STATIC

NODE = shutil.which("node")


def run(tmp_path: Path, body: str) -> Any:
    script = tmp_path / "theme.mjs"
    script.write_text(
        f"import * as theme from '{(STATIC / 'theme.js').as_uri()}';\n"
        f"console.log(JSON.stringify((() => {{ {body} }})()));\n"
    )
    if NODE is None:
        pytest.fail("Node.js is missing (README: Node.js 20+)", pytrace=False)
    done = subprocess.run(
        [NODE, "--no-warnings", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_theme_names_and_accent_colours(tmp_path: Path) -> None:
    names = ["light", "dark", "system", "DARK", "ocean", "", None]
    accepted = ["#6d28d9", "#fff", "#11223344", "rgb(10, 20, 30)", "hsl(262 83% 58%)", "teal"]
    refused = [
        "url(https://evil.example/x.png)",
        "red; background: url(x)",
        "var(--x)",
        "expression(alert(1))",
        "#12345",
        "rgb(1,2,3) url(x)",
        "",
        "a" * 40,
    ]
    out = run(
        tmp_path,
        f"return {{ names: {json.dumps(names)}.map(theme.themeName),"
        f" accepted: {json.dumps(accepted)}.map(theme.accentColor),"
        f" refused: {json.dumps(refused)}.map(theme.accentColor) }};",
    )
    assert out["names"] == ["light", "dark", "system", "light", "light", "light", "light"]
    assert out["accepted"] == accepted
    assert out["refused"] == [None] * len(refused)
    assert "theme.js" in ASSETS


@pytest.mark.parametrize(
    ("computed", "ink"),
    [
        ("rgb(109, 40, 217)", "#fff"),  # violet: white reads better
        ("rgb(29, 78, 216)", "#fff"),
        ("rgb(250, 204, 21)", "#0f172a"),  # yellow: dark text
        ("rgba(255, 255, 255, 1)", "#0f172a"),
        ("rgb(96, 165, 250)", "#0f172a"),  # the dark theme's own accent
        ("not a colour", "#fff"),
    ],
)
def test_button_text_contrasts_with_the_accent(tmp_path: Path, computed: str, ink: str) -> None:
    assert run(tmp_path, f"return theme.inkFor({json.dumps(computed)});") == ink
