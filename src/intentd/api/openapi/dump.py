"""``python -m intentd.api.openapi.dump [PATH]`` (``make openapi``): write the API's
OpenAPI document, as served at ``/api/v1/openapi.json``, to ``docs/openapi.json``.

The document does not depend on the deployment's settings (chains, fees and keys
are data the routes read, not part of their schemas), so it is built from
placeholder settings that need no database, broker or secret. A test
(``tests/integration/api/test_api_openapi_file.py``) keeps the committed file equal
to what the server serves.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from intentd.api.app import create_app
from intentd.contract.formats import document_bytes
from intentd.settings import Settings

__all__ = ["DEFAULT_PATH", "document"]

DEFAULT_PATH = Path("docs/openapi.json")
_PLACEHOLDER = {
    "environment": "test",
    "database": {"url": "postgresql://127.0.0.1/unused"},
    "kafka": {"bootstrap_servers": "127.0.0.1:1"},
    "chains": {
        "LOCAL": {
            "name": "LOCAL",
            "chain_id": 1,
            "network": "test",
            "rpc_urls": ["http://127.0.0.1:1"],
            "relayer": "0x" + "11" * 20,
        }
    },
}


def document() -> dict[str, Any]:
    app = create_app(Settings.model_validate(_PLACEHOLDER))
    return app.openapi()


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_bytes(document_bytes(document()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
