"""``.local/infra.env``: the endpoints of the running stack, as KEY=VALUE lines.

Written by ``up`` (removed by ``down``); read by tests, the demo and anyone who
``set -a; . .local/infra.env``. It names secret files but never holds a secret.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout, find_layout

KEYS: Final = (
    "INTENTD_DATABASE_URL",
    "INTENTD_KAFKA_BOOTSTRAP",
    "INTENTD_KAFKA_MOCK_CONTROL",
    "INTENTD_BASE_TESTNET_RPC_URL",
    "INTENTD_ARBITRUM_TESTNET_RPC_URL",
    "INTENTD_BASE_TESTNET_USDC",
    "INTENTD_BASE_TESTNET_USDT",
    "INTENTD_ARBITRUM_TESTNET_USDC",
    "INTENTD_ARBITRUM_TESTNET_USDT",
    "INTENTD_HD_MNEMONIC_FILE",
    "INTENTD_DEV_DEPLOYER_KEY_FILE",
    "INTENTD_DEV_PAYER_KEY_FILE",
    "INTENTD_RELAYER_KEY_FILE",
    "INTENTD_GAS_TANK_KEY_FILE",
    "INTENTD_DEV_PAYER_ADDRESS",
    "INTENTD_RELAYER_ADDRESS",
    "INTENTD_GAS_TANK_ADDRESS",
    "INTENTD_FEE_ACCOUNT_ADDRESS",
)
OPTIONAL_KEYS: Final = ("INTENTD_TANSU_BOOTSTRAP",)
"""Written when the component runs (Tansu: on x86-64 Linux, the only build pinned)."""


def write_env(path: Path, values: Mapping[str, str]) -> None:
    """Write `KEYS` and those of `OPTIONAL_KEYS` given, in that order; raises ValueError
    if a key of `KEYS` is missing or one of neither is given."""
    missing, unknown = set(KEYS) - set(values), set(values) - set(KEYS) - set(OPTIONAL_KEYS)
    if missing or unknown:
        raise ValueError(f"infra.env keys differ: {sorted(missing | unknown)}")
    for key, value in values.items():
        if not value or any(c in value for c in "\n\r\"' "):
            raise ValueError(f"{key} has an empty or unquotable value")
    tmp = path.with_suffix(".tmp")
    keys = [key for key in (*KEYS, *OPTIONAL_KEYS) if key in values]
    tmp.write_text("".join(f"{key}={values[key]}\n" for key in keys))
    tmp.replace(path)


def read_env(path: Path) -> dict[str, str]:
    """The KEY=VALUE lines of `path` (blank lines and # comments skipped)."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"{path}: not KEY=VALUE: {line!r}")
            values[key.strip()] = value.strip()
    return values


def load_infra_env(layout: Layout | None = None) -> dict[str, str]:
    """The endpoints of the running stack; raises `InfraError` if it was never brought up."""
    path = (layout or find_layout()).env_file
    if not path.exists():
        raise InfraError("infra", f"{path} is missing: run `make infra-up`")
    return read_env(path)
