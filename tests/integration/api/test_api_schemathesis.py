"""The served OpenAPI document matches the behaviour: schemathesis fuzzes every
operation (examples, coverage and fuzzing phases) and must find no 5xx, no
undocumented status, header or content type, and no response that breaks its schema.

Bounded: at most ``MAX_EXAMPLES`` cases per operation, under a minute.
Excluded check: ``positive_data_acceptance`` (schema-valid data is often refused on
purpose: an unknown chain or token is a string the schema allows, answered 422).

The stateful phase runs on its own (``test_stateful_phase_follows_the_links``): it
chains calls along the document's links (``api.openapi.links``), e.g. creates an
intent and reads and triggers it by the id and address it was given, with the same
checks. Random bodies almost never create anything, so these runs bind the body
fields to dictionaries of values the test settings accept (chains, tokens,
addresses); the other fields stay random. Link inference is off: schemathesis would
otherwise start its scenarios from operations its inferred links lead out of and
never from ``POST /intents`` (it takes ``refund_address`` for a reference to a
"Refund" resource nothing creates). Bounded: ``SCENARIOS`` scenarios of at most
``MAX_STEPS`` calls per run, about twenty seconds for both runs.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
from tests.integration.api.conftest import Api, MakeKey

from intentd.settings import Settings

pytestmark = pytest.mark.integration

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
MAX_EXAMPLES = 25
EXCLUDED_CHECKS = "positive_data_acceptance"
SESSION_PATHS = "^/api/v1/session(/|$)"
# The stateful runs leave out ``negative_data_rejection`` too (the fuzzing runs check
# it): a type mutation of a query list, e.g. a number for ``excludeChains``, goes on
# the wire as a valid one-item list, and schemathesis 4.32's stateful phase still
# reports that it was accepted.
STATEFUL_EXCLUDED_CHECKS = f"{EXCLUDED_CHECKS},negative_data_rejection"
# Stateful phase: scenarios per run, calls per scenario.
SCENARIOS = 25
MAX_STEPS = 6
# The phase explores at random: a link it did not take in one run (seen once in about
# thirty runs) gets up to two more runs; every run must pass its checks.
RUNS = 3
PAYEE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
ADDRESSES = [PAYEE, "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"]


async def schemathesis(
    api: Api, *options: str, report: Path, config: Path | None = None
) -> tuple[int, str]:
    """Run schemathesis on the served document; (exit code, output)."""
    before = ["--config-file", str(config)] if config is not None else []
    process = await asyncio.create_subprocess_exec(
        str(SCHEMATHESIS),
        *before,
        "run",
        f"{api.url}/api/v1/openapi.json",
        "--checks",
        "all",
        "--workers",
        "1",
        "--request-timeout",
        "20",
        "--generation-database",
        "none",
        "--suppress-health-check",
        "all",
        "--no-color",
        "--report-dir",
        str(report),
        *options,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


async def fuzz(api: Api, token: str, *filters: str, report: Path) -> tuple[int, str]:
    return await schemathesis(
        api,
        "--exclude-checks",
        EXCLUDED_CHECKS,
        "--max-examples",
        str(MAX_EXAMPLES),
        "--phases",
        "examples,coverage,fuzzing",
        "--report",
        "junit",
        "-H",
        f"Authorization: Bearer {token}",
        *filters,
        report=report,
    )


async def create_session(api: Api, key: str) -> str:
    status, created, _ = await api.call(
        "POST",
        "/sessions",
        key,
        body={
            "recipient": PAYEE,
            "destinationChain": "ARBITRUM_TESTNET",
            "token": next(t.address for t in api.settings.chains["ARBITRUM_TESTNET"].tokens),
        },
    )
    assert status == 201, created
    token: str = created["session_token"]
    return token


@pytest.mark.timeout(240)
async def test_schemathesis_finds_no_contract_violation(
    api: Api, make_key: MakeKey, tmp_path: Path
) -> None:
    key = await make_key("test", rate_limit=1_000_000)
    code, output = await fuzz(
        api, key, "--exclude-path-regex", SESSION_PATHS, report=tmp_path / "keys"
    )
    assert code == 0, output[-6000:]
    token = await create_session(api, key)
    code, output = await fuzz(
        api, token, "--include-path-regex", SESSION_PATHS, report=tmp_path / "session"
    )
    assert code == 0, output[-6000:]


def stateful_config(path: Path, settings: Settings, bearers: dict[str, str]) -> Path:
    """A schemathesis.toml: the stateful phase's bounds, body fields bound to values
    the settings accept, and a bearer token per security scheme (``ApiKey``,
    ``SessionToken``) for the schemes given (per scheme: ``-H`` would send one token
    to every operation)."""
    chains = [name for name, chain in settings.chains.items() if chain.network == "test"]
    tokens = sorted({t.address for name in chains for t in settings.chains[name].tokens})
    symbols = sorted({t.symbol for name in chains for t in settings.chains[name].tokens})
    values: dict[str, tuple[list[str] | list[int], list[str]]] = {
        "chains": (chains, ["source_chain", "destination_chain", "destinationChain"]),
        "tokens": (tokens, ["tokenIn", "tokenOut", "token"]),
        "addresses": (ADDRESSES, ["recipient", "refund_address", "sender"]),
        "amounts": (["1", "12.5", "0.000001"], ["amount"]),
        "symbols": ([*symbols, "USD"], ["amountSymbol"]),
        "bridges": ([b.name for b in settings.fees.bridges], ["bridge"]),
        "lifetimes": ([600, 3600], ["expires_in"]),
    }
    lines = [
        "[phases.stateful]",
        f"max-steps = {MAX_STEPS}",
        "[phases.stateful.inference]",
        "algorithms = []",
    ]
    for name, (entries, _) in values.items():
        lines += [f"[dictionaries.{name}]", f"values = {json.dumps(entries)}"]
    lines.append("[parameters]")
    for name, (_, fields) in values.items():
        lines += [f'"body.{field}" = {{ dictionary = "{name}" }}' for field in fields]
    lines.append('"query.amount" = { dictionary = "amounts" }')
    for scheme, bearer in bearers.items():
        lines += [f"[auth.openapi.{scheme}]", f"bearer = {json.dumps(bearer)}"]
    path.write_text("\n".join(lines) + "\n")
    return path


async def stateful(
    api: Api, config: Path, *options: str, excluded_checks: str, report: Path
) -> set[str]:
    """Run the stateful phase; the names of the links it followed to a 2xx answer."""
    events = report / "events.ndjson"
    code, output = await schemathesis(
        api,
        "--phases",
        "stateful",
        "--max-examples",
        str(SCENARIOS),
        "--exclude-checks",
        excluded_checks,
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(events),
        *options,
        config=config,
        report=report,
    )
    assert code == 0, output[-6000:]
    followed = set()
    for line in events.read_text().splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if finished is None:
            continue
        recorder = finished["recorder"]
        for case_id, case in recorder.get("cases", {}).items():
            transition = case.get("transition")
            response = recorder["interactions"].get(case_id, {}).get("response")
            if transition is None or not case.get("is_transition_applied") or response is None:
                continue
            name = re.search(r"\] (\w+) -> ", transition["id"])
            if name is not None and 200 <= response["status_code"] < 300:
                followed.add(name.group(1))
    return followed


@pytest.mark.timeout(240)
async def test_stateful_phase_follows_the_links(
    api: Api, make_key: MakeKey, tmp_path: Path
) -> None:
    key = await make_key("test", rate_limit=1_000_000)
    # A key and a session token of the test's: intents of either kind, then reads and
    # triggers of them (POST /sessions left out: its token would take the place of
    # the configured one).
    expected = {
        "GetIntentById",
        "GetIntentEvents",
        "GetIntentByAddress",
        "TriggerProcessing",
        "GetSessionIntent",
        "PaymentMade",
    }
    followed: set[str] = set()
    for run in range(RUNS):  # each run must pass; the links taken add up
        # A new session each run: a session creates at most api.max_intents_per_session
        # intents, and the links from its intents must still be taken.
        token = await create_session(api, key)
        bearers = {"ApiKey": key, "SessionToken": token}
        config = stateful_config(tmp_path / f"fixed{run}.toml", api.settings, bearers)
        followed |= await stateful(
            api,
            config,
            "--exclude-path",
            "/api/v1/sessions",
            excluded_checks=STATEFUL_EXCLUDED_CHECKS,
            report=tmp_path / f"fixed{run}",
        )
        if followed >= expected:
            break
    assert followed == expected

    # Only the key configured: the session endpoints get the token POST /sessions
    # answered, through the links. ``ignored_auth`` is left out here: it takes a
    # token schemathesis was not given for a generated one, which must be refused.
    config = stateful_config(tmp_path / "links.toml", api.settings, {"ApiKey": key})
    expected = {"GetSession", "GetSessionQuotes", "CreateSessionIntent"}
    followed = set()
    for run in range(RUNS):
        followed |= await stateful(
            api,
            config,
            "--include-path-regex",
            "^/api/v1/(sessions|session|session/quotes|session/intents)$",
            excluded_checks=f"{STATEFUL_EXCLUDED_CHECKS},ignored_auth",
            report=tmp_path / f"links{run}",
        )
        if followed >= expected:
            break
    assert followed == expected
