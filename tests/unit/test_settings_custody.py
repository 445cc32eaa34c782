"""Settings we trust with money fail closed: keys where they belong, no secret in the
config file or in an error, no relayer left empty, no secret file others can read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from intentd.custody import IntentKeys
from intentd.settings import ConfigError, load_settings
from intentd.settings.redaction import redact_url
from intentd.settings.secrets import secret_file_problem

MNEMONIC = "test test test test test test test test test test test junk"
OTHER_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow"
XPUB = IntentKeys(MNEMONIC).xpub.serialize()
ENV = {"INTENTD_DATABASE_URL": "postgresql://u:pw@db:5432/intentd"}
RELAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def chain(
    name: str, chain_id: int, relayer: str = RELAYER, url: str = "https://rpc.example"
) -> str:
    return f"""
[chains.{name}]
chain_id = {chain_id}
network = "main"
rpc_urls = ["{url}"]
relayer = "{relayer}"
"""


BASE = """
[database]
url = "${INTENTD_DATABASE_URL}"
[kafka]
bootstrap_servers = "k:9092"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def secret_file(tmp_path: Path, name: str, content: str, mode: int = 0o600) -> str:
    path = tmp_path / name
    path.write_text(content + "\n")
    path.chmod(mode)
    return str(path)


# -- item 5: the extended public key --------------------------------------------------


def test_the_api_side_runs_on_the_xpub_alone(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + chain("BASE", 8453))
    settings = load_settings(path, {**ENV, "INTENTD_HD_XPUB": XPUB})
    assert settings.hd_mnemonic is None
    assert settings.intent_addresses().address(7) == IntentKeys(MNEMONIC).address(7)
    with pytest.raises(ConfigError, match="hd_mnemonic: not set"):
        settings.intent_keys()


def test_the_xpub_may_come_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + chain("BASE", 8453))
    env = {**ENV, "INTENTD_HD_XPUB_FILE": secret_file(tmp_path, "xpub", XPUB)}
    assert load_settings(path, env).intent_addresses().xpub.serialize() == XPUB


def test_without_an_xpub_the_addresses_come_from_the_mnemonic(tmp_path: Path) -> None:
    settings = load_settings(
        write(tmp_path, BASE + chain("BASE", 8453)), {**ENV, "INTENTD_HD_MNEMONIC": MNEMONIC}
    )
    assert settings.intent_addresses().xpub.serialize() == XPUB


def test_no_key_at_all_is_refused_when_addresses_are_needed(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, BASE + chain("BASE", 8453)), ENV)
    with pytest.raises(ConfigError, match="hd_xpub: not set; give INTENTD_HD_XPUB"):
        settings.intent_addresses()


def test_a_mnemonic_and_an_xpub_that_disagree_refuse_to_start(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + chain("BASE", 8453))
    env = {**ENV, "INTENTD_HD_MNEMONIC": OTHER_MNEMONIC, "INTENTD_HD_XPUB": XPUB}
    with pytest.raises(ConfigError) as raised:
        load_settings(path, env)
    message = str(raised.value)
    assert "hd_xpub" in message and "hd_mnemonic" in message
    assert OTHER_MNEMONIC.split(maxsplit=1)[0] not in message
    # the same pair that agrees is fine
    load_settings(path, {**env, "INTENTD_HD_MNEMONIC": MNEMONIC})


@pytest.mark.parametrize(
    ("xpub", "error"),
    [
        (XPUB[:-1] + ("2" if XPUB[-1] != "2" else "3"), "checksum"),
        (IntentKeys(MNEMONIC).xpub.child(0).serialize(), "depth 5"),
    ],
)
def test_a_wrong_xpub_is_refused_naming_the_key(tmp_path: Path, xpub: str, error: str) -> None:
    path = write(tmp_path, BASE + chain("BASE", 8453))
    with pytest.raises(ConfigError, match=rf"hd_xpub = '{xpub}': .*{error}"):
        load_settings(path, {**ENV, "INTENTD_HD_XPUB": xpub})


# -- item 6: fail closed ---------------------------------------------------------------


def test_an_empty_relayer_on_a_possible_destination_refuses_to_start(tmp_path: Path) -> None:
    # Today's code starts, pays the prefill from the relayer key, and the lifecycle then
    # cannot record it (prefill_sent needs the relayer's address): the intent stays
    # FUNDED and the relayer is never repaid.
    text = BASE + chain("BASE", 8453) + chain("ARBITRUM", 42161, relayer="")
    with pytest.raises(ConfigError, match=r"chains\.ARBITRUM\.relayer = '': .*destination"):
        load_settings(write(tmp_path, text), ENV)


def test_a_chain_no_route_reaches_may_leave_its_relayer_empty(tmp_path: Path) -> None:
    text = (
        BASE
        + chain("BASE", 8453)
        + chain("ARBITRUM", 42161, relayer="")
        + '[[fees.bridges]]\nname = "relay"\nroutes = ["ARBITRUM->BASE"]\n'
    )
    settings = load_settings(write(tmp_path, text), ENV)
    assert settings.chains["ARBITRUM"].relayer == ""


def test_the_example_config_asks_for_its_relayers() -> None:
    root = Path(__file__).resolve().parents[2]
    with pytest.raises(ConfigError, match=r"relayer = .*INTENTD_BASE_RELAYER is not set"):
        load_settings(root / "config" / "example.toml", ENV)


@pytest.mark.parametrize(
    "line",
    [
        f'hd_mnemonic = "{MNEMONIC}"',
        'relayer_key = "0x01"',
        'gas_tank_key = "0x01"',
        'session_secret = "0123456789abcdef0123456789abcdef"',
        f'hd_xpub = "{XPUB}"',
    ],
)
def test_a_secret_in_the_config_file_is_refused_naming_the_key(tmp_path: Path, line: str) -> None:
    key, _, value = line.partition(" = ")
    with pytest.raises(ConfigError, match=rf"^{key}: .*INTENTD_") as raised:
        load_settings(write(tmp_path, line + "\n" + BASE + chain("BASE", 8453)), ENV)
    assert value.strip('"') not in str(raised.value)


def test_a_database_password_in_the_config_file_is_refused(tmp_path: Path) -> None:
    text = BASE.replace("${INTENTD_DATABASE_URL}", "postgresql://u:hunter2@db/x")
    with pytest.raises(ConfigError, match=r"database\.url: .*password") as raised:
        load_settings(write(tmp_path, text + chain("BASE", 8453)), ENV)
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    ("mode", "owner", "refused"),
    [
        (0o600, 1000, False),
        (0o400, 1000, False),
        (0o640, 1000, True),
        (0o604, 1000, True),
        (0o644, 1000, True),
        (0o620, 1000, True),
        (0o640, 0, False),  # root-owned, group-readable: Kubernetes secrets with fsGroup
        (0o440, 0, False),
        (0o660, 0, True),
        (0o644, 0, True),
    ],
)
def test_secret_file_permissions(mode: int, owner: int, refused: bool) -> None:
    assert (secret_file_problem(stat.S_IFREG | mode, owner) is not None) is refused


def test_a_private_key_given_as_the_xpub_is_not_shown(tmp_path: Path) -> None:
    xprv = (
        "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5"
        "kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
    )
    path = write(tmp_path, BASE + chain("BASE", 8453))
    with pytest.raises(ConfigError, match=r"hd_xpub = <not shown>: .*PRIVATE") as raised:
        load_settings(path, {**ENV, "INTENTD_HD_XPUB": xprv})
    assert xprv not in str(raised.value)


def test_a_secret_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + chain("BASE", 8453))
    loose = secret_file(tmp_path, "seed", MNEMONIC, 0o644)
    with pytest.raises(ConfigError, match=r"INTENTD_HD_MNEMONIC_FILE = .*seed.*0644"):
        load_settings(path, {**ENV, "INTENTD_HD_MNEMONIC_FILE": loose})
    os.chmod(loose, 0o600)
    assert load_settings(path, {**ENV, "INTENTD_HD_MNEMONIC_FILE": loose}).mnemonic() == MNEMONIC


PROVIDER_URL = "https://base-mainnet.g.alchemy.com/v2/s3cr3tk3y"


def test_rpc_urls_are_redacted_in_repr_and_errors(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, BASE + chain("BASE", 8453, url=PROVIDER_URL)), ENV)
    assert settings.chains["BASE"].rpc_urls == [PROVIDER_URL]  # used as given
    assert "s3cr3tk3y" not in repr(settings)
    assert "base-mainnet.g.alchemy.com" in repr(settings)
    bad = BASE + chain("BASE", 8453, url=PROVIDER_URL) + chain("BASE2", 8453)
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, bad), ENV)
    assert "share a chain_id" in str(raised.value)
    assert "s3cr3tk3y" not in str(raised.value) and "pw" not in str(raised.value)
    token = '{ address = "%s", symbol = "U", name = "U", decimals = 6, category = "stablecoin" }'
    twice = chain("BASE", 8453, url=PROVIDER_URL) + f"tokens = [{token % USDC}, {token % USDC}]\n"
    with pytest.raises(ConfigError, match="listed twice") as raised:
        load_settings(write(tmp_path, BASE + twice), ENV)
    assert "s3cr3tk3y" not in str(raised.value)
    broken = BASE + chain("BASE", 8453, url="ftp://host/v2/s3cr3tk3y")
    with pytest.raises(ConfigError, match="rpc_urls") as raised:
        load_settings(write(tmp_path, broken), ENV)
    assert "s3cr3tk3y" not in str(raised.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://mainnet.base.org", "https://mainnet.base.org"),
        ("https://mainnet.base.org/", "https://mainnet.base.org/"),
        ("http://127.0.0.1:8545", "http://127.0.0.1:8545"),
        (PROVIDER_URL, "https://base-mainnet.g.alchemy.com/<redacted>"),
        ("https://rpc.example?apikey=k", "https://rpc.example/<redacted>"),
        ("https://user:k@rpc.example/", "https://rpc.example/<redacted>"),
        ("wss://rpc.example:443/ws/k", "wss://rpc.example:443/<redacted>"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
