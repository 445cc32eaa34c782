"""The committed ``docs/openapi.json`` is the document the server serves."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from tests.integration.api.conftest import Api

from intentd.contract.formats import document_bytes

pytestmark = pytest.mark.integration

COMMITTED = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"


async def test_the_committed_document_is_the_served_one(api: Api) -> None:
    async with api.http.get(f"{api.url}/api/v1/openapi.json") as response:
        assert response.status == 200
        served = orjson.loads(await response.read())
    assert document_bytes(served).decode() == COMMITTED.read_text(), (
        "docs/openapi.json differs from the served document: regenerate it with"
        " `make openapi` (python -m intentd.api.openapi.dump) and commit it"
    )
