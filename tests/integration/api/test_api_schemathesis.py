"""The served OpenAPI document matches the behaviour: schemathesis fuzzes every
operation (examples, coverage and fuzzing phases) and must find no 5xx, no
undocumented status, header or content type, and no response that breaks its schema.

Bounded: at most ``MAX_EXAMPLES`` cases per operation, about a minute in all.
Excluded check: ``positive_data_acceptance`` (schema-valid data is often refused on
purpose: an unknown chain or token is a string the schema allows, answered 422).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from tests.integration.api.conftest import Api, MakeKey

pytestmark = pytest.mark.integration

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
MAX_EXAMPLES = 25
EXCLUDED_CHECKS = "positive_data_acceptance"


async def schemathesis(api: Api, token: str, *filters: str, report: Path) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(SCHEMATHESIS),
        "run",
        f"{api.url}/api/v1/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        EXCLUDED_CHECKS,
        "--max-examples",
        str(MAX_EXAMPLES),
        "--phases",
        "examples,coverage,fuzzing",
        "--workers",
        "1",
        "--request-timeout",
        "20",
        "--generation-database",
        "none",
        "--suppress-health-check",
        "all",
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(report),
        "-H",
        f"Authorization: Bearer {token}",
        *filters,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


@pytest.mark.timeout(240)
async def test_schemathesis_finds_no_contract_violation(
    api: Api, make_key: MakeKey, tmp_path: Path
) -> None:
    key = await make_key("test", rate_limit=1_000_000)
    code, output = await schemathesis(
        api, key, "--exclude-path-regex", "^/api/v1/session(/|$)", report=tmp_path / "keys"
    )
    assert code == 0, output[-6000:]
    status, created, _ = await api.call(
        "POST",
        "/sessions",
        key,
        body={
            "recipient": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
            "destinationChain": "ARBITRUM_TESTNET",
            "token": next(t.address for t in api.settings.chains["ARBITRUM_TESTNET"].tokens),
        },
    )
    assert status == 201, created
    code, output = await schemathesis(
        api,
        created["session_token"],
        "--include-path-regex",
        "^/api/v1/session(/|$)",
        report=tmp_path / "session",
    )
    assert code == 0, output[-6000:]
