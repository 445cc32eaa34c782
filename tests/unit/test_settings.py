"""Config loading: interpolation, overrides, secrets, and errors that name key and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentd.settings import ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]
ENV = {"INTENTD_DATABASE_URL": "postgresql://u:pw@db:5432/intentd", "INTENTD_HD_MNEMONIC": "w"}
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


MINIMAL = f"""
[database]
url = "${{INTENTD_DATABASE_URL}}"
[kafka]
bootstrap_servers = "k:9092"
[chains.BASE]
chain_id = 8453
network = "main"
rpc_urls = ["https://rpc.example"]
[[chains.BASE.tokens]]
address = "{USDC.lower()}"
symbol = "USDC"
name = "USD Coin"
decimals = 6
category = "stablecoin"
"""


def test_example_config_is_valid() -> None:
    chains = ("BASE", "ARBITRUM", "BASE_TESTNET", "ARBITRUM_TESTNET")
    relayers = {f"INTENTD_{c}_RELAYER": USDC for c in chains}
    settings = load_settings(ROOT / "config" / "example.toml", {**ENV, **relayers})
    assert {"BASE", "BASE_TESTNET", "ARBITRUM_TESTNET"} <= set(settings.chains)
    assert settings.chains["BASE"].chain_id == 8453
    assert settings.chains["BASE_TESTNET"].chain_id == 84532
    assert settings.chains["ARBITRUM_TESTNET"].chain_id == 421614
    assert settings.chains["BASE"].tokens[0].address == USDC
    assert settings.chains["BASE"].tokens[0].verify_above_units == 1_000 * 10**6
    assert settings.chains["BASE"].verify_rpc_urls  # a threshold ships with its provider


def test_local_config_reads_infra_env(tmp_path: Path) -> None:
    env = {
        **ENV,
        "INTENTD_KAFKA_BOOTSTRAP": "127.0.0.1:1",
        "INTENTD_RELAYER_ADDRESS": USDC,
        "INTENTD_FEE_ACCOUNT_ADDRESS": USDC,
        **{
            f"INTENTD_{c}_RPC_URL": "http://127.0.0.1:1"
            for c in ("BASE_TESTNET", "ARBITRUM_TESTNET")
        },
        **{
            f"INTENTD_{c}_{t}": USDC if t == "USDC" else "0x" + "1" * 40
            for c in ("BASE_TESTNET", "ARBITRUM_TESTNET")
            for t in ("USDC", "USDT")
        },
    }
    settings = load_settings(ROOT / "config" / "local.toml", env)
    assert settings.environment == "test"
    assert set(settings.chains) == {"BASE_TESTNET", "ARBITRUM_TESTNET"}


def test_tokens_are_checksummed_and_secret_comes_from_env(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, MINIMAL), ENV)
    assert settings.chains["BASE"].tokens[0].address == USDC
    assert settings.mnemonic() == "w"
    assert "pw" not in repr(settings)


def test_mnemonic_from_file(tmp_path: Path) -> None:
    secret = tmp_path / "seed"
    secret.write_text("words here\n")
    secret.chmod(0o600)
    env = {
        "INTENTD_DATABASE_URL": ENV["INTENTD_DATABASE_URL"],
        "INTENTD_HD_MNEMONIC_FILE": str(secret),
    }
    assert load_settings(write(tmp_path, MINIMAL), env).mnemonic() == "words here"


def test_env_files_are_read_and_real_env_wins(tmp_path: Path) -> None:
    (tmp_path / "infra.env").write_text("# comment\nINTENTD_DATABASE_URL=postgresql://file/db\n")
    path = write(tmp_path, 'env_files = ["infra.env", "missing.env"]\n' + MINIMAL)
    assert load_settings(path, {}).database.url.get_secret_value() == "postgresql://file/db"
    real = {"INTENTD_DATABASE_URL": "postgresql://env/db"}
    assert load_settings(path, real).database.url.get_secret_value() == "postgresql://env/db"


def test_a_chain_is_evm_unless_its_family_says_otherwise(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, MINIMAL), ENV)
    assert settings.chains["BASE"].family == "evm"
    named = MINIMAL.replace('network = "main"', 'network = "main"\nfamily = "evm"')
    assert load_settings(write(tmp_path, named), ENV).chains["BASE"].family == "evm"


def test_override_from_environment(tmp_path: Path) -> None:
    env = {**ENV, "INTENTD__CHAINS__BASE__CONFIRMATIONS": "12", "INTENTD__KAFKA__TOPIC_PREFIX": "p"}
    settings = load_settings(write(tmp_path, MINIMAL), env)
    assert settings.chains["BASE"].confirmations == 12
    assert settings.kafka.topic_prefix == "p"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("chain_id = 8453", "chain_id = -1"), "chains.BASE.chain_id = -1"),
        (('network = "main"', 'network = "mainnet"'), "chains.BASE.network = 'mainnet'"),
        (
            ('network = "main"', 'network = "main"\nfamily = "solana"'),
            "chains.BASE.family = 'solana'",
        ),
        (('rpc_urls = ["https://rpc.example"]', 'rpc_urls = ["ftp://x"]'), "chains.BASE.rpc_urls"),
        ((USDC.lower(), "0x1234"), "chains.BASE.tokens.0.address = '0x1234'"),
        (('"stablecoin"', '"meme"'), "chains.BASE.tokens.0.category = 'meme'"),
        (("chains.BASE", "chains.base"), "chain key 'base' must be upper case"),
    ],
)
def test_invalid_values_name_key_and_value(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, MINIMAL.replace(*change)), ENV)
    assert message in str(raised.value)


def test_missing_variable_names_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"database\.url .* INTENTD_DATABASE_URL is not set"):
        load_settings(write(tmp_path, MINIMAL), {})


def test_password_never_shown_in_errors(tmp_path: Path) -> None:
    env = {**ENV, "INTENTD_DATABASE_URL": "mysql://u:hunter2@db/x"}
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, MINIMAL), env)
    assert "hunter2" not in str(raised.value)
    assert "database.url = <secret>" in str(raised.value)


def test_missing_mnemonic_is_a_clear_error(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, MINIMAL), {"INTENTD_DATABASE_URL": "postgresql://x/y"})
    with pytest.raises(ConfigError, match="INTENTD_HD_MNEMONIC"):
        settings.mnemonic()


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    text = MINIMAL.replace("chain_id = 8453\n", "chain_id = 8453\nconfirmation = 3\n")
    with pytest.raises(ConfigError, match=r"chains\.BASE\.confirmation = 3"):
        load_settings(write(tmp_path, text), ENV)


def test_rate_limit_is_shared_by_every_api_process(tmp_path: Path) -> None:
    text = MINIMAL + "[api]\nworkers = 3\nreplicas = 2\n"
    settings = load_settings(write(tmp_path, text), ENV)
    assert settings.api.rate_limit_shares == 6


def test_min_sweep_defaults_by_category_and_a_volatile_token_must_set_it(
    tmp_path: Path,
) -> None:
    settings = load_settings(write(tmp_path, MINIMAL), ENV)
    chain = settings.chains["BASE"]
    assert chain.tokens[0].min_sweep_units == 100_000  # 0.1 USDC
    assert chain.native.min_sweep_units == 5 * 10**13  # 0.00005 ETH
    custom = MINIMAL + 'min_sweep = "0.5"\n'
    assert load_settings(write(tmp_path, custom), ENV).chains["BASE"].tokens[0].min_sweep_units == (
        500_000
    )
    volatile = MINIMAL.replace('category = "stablecoin"', 'category = "volatile"')
    with pytest.raises(ConfigError, match="min_sweep"):
        load_settings(write(tmp_path, volatile), ENV)
    too_precise = MINIMAL + 'min_sweep = "0.0000001"\n'
    with pytest.raises(ConfigError, match="min_sweep"):
        load_settings(write(tmp_path, too_precise), ENV)


@pytest.mark.parametrize("days", ["0", "-3", "thirty"])
def test_a_bad_watch_retention_refuses_to_start_naming_the_key(tmp_path: Path, days: str) -> None:
    env = {**ENV, "INTENTD__INDEXER__WATCH_RETENTION_DAYS": days}
    with pytest.raises(ConfigError, match=r"indexer\.watch_retention_days"):
        load_settings(write(tmp_path, MINIMAL), env)
    assert load_settings(write(tmp_path, MINIMAL), ENV).indexer.watch_retention_days == 30


def test_the_watch_window_must_outlast_the_longest_intent(tmp_path: Path) -> None:
    env = {
        **ENV,
        "INTENTD__INDEXER__WATCH_RETENTION_DAYS": "6",
        "INTENTD__INTENTS__MAX_EXPIRES_IN": str(7 * 86_400),
    }
    with pytest.raises(ConfigError, match=r"indexer\.watch_retention_days = 6 .*max_expires_in"):
        load_settings(write(tmp_path, MINIMAL), env)


def test_a_clients_webhook_share_is_at_most_a_process(tmp_path: Path) -> None:
    env = {**ENV, "INTENTD__WEBHOOKS__MAX_IN_FLIGHT": "16"}
    with pytest.raises(ConfigError, match=r"webhooks.*per_client_in_flight \(32\) .*max_in_flight"):
        load_settings(write(tmp_path, MINIMAL), env)
    env["INTENTD__WEBHOOKS__PER_CLIENT_IN_FLIGHT"] = "4"
    webhooks = load_settings(write(tmp_path, MINIMAL), env).webhooks
    assert (webhooks.per_client_in_flight, webhooks.max_endpoints_per_client) == (4, 16)
    assert webhooks.send_calls_per_minute == 60


def test_explorer_url_is_an_http_url_and_a_bad_one_names_the_key(tmp_path: Path) -> None:
    plain = load_settings(write(tmp_path, MINIMAL), ENV).chains["BASE"]
    assert plain.explorer_url == ""
    given = MINIMAL.replace(
        'rpc_urls = ["https://rpc.example"]',
        'rpc_urls = ["https://rpc.example"]\nexplorer_url = "https://basescan.org/"',
    )
    chain = load_settings(write(tmp_path, given), ENV).chains["BASE"]
    assert chain.explorer_url == "https://basescan.org"
    for bad in ("javascript:alert(1)", "https://x.org/?q=1", "basescan.org", "https://a b"):
        with pytest.raises(ConfigError) as raised:
            load_settings(write(tmp_path, given.replace("https://basescan.org/", bad)), ENV)
        assert "chains.BASE.explorer_url" in str(raised.value)
