"""Dev accounts (anvil's default mnemonic) and the secret files that hold their keys.

The mnemonic and its keys are public: every anvil prints them. They still go only into
files under ``.local/secrets/`` (mode 0600) so that no habit of logging keys takes root.
"""

import enum
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from eth_account import Account
from eth_account.hdaccount import generate_mnemonic, key_from_seed, seed_from_mnemonic
from eth_account.types import Language
from eth_typing import ChecksumAddress

ANVIL_MNEMONIC: Final = "test test test test test test test test test test test junk"


class Role(enum.Enum):
    """What each of the first anvil accounts is used for; the value is its HD index."""

    DEPLOYER = 0  # deploys the test tokens
    PAYER = 1  # the demo's end user: pays intents, holds test tokens
    RELAYER = 2  # prefills on the destination chain, holds test tokens
    GAS_TANK = 3  # funds gas for sweeps from intent addresses
    FEE = 4  # receives fees


@dataclass(frozen=True)
class DevAccount:
    role: Role
    address: ChecksumAddress
    private_key: str = field(repr=False)  # 0x-prefixed hex; never printed


def dev_account(role: Role) -> DevAccount:
    """The account of `role`: index ``role.value`` of anvil's default mnemonic."""
    seed = seed_from_mnemonic(ANVIL_MNEMONIC, "")
    key = key_from_seed(seed, f"m/44'/60'/0'/0/{role.value}")
    return DevAccount(role, Account.from_key(key).address, "0x" + key.hex())


def write_secret(path: Path, content: str) -> None:
    """Write `content` to `path` with mode 0600, atomically; the directory must exist."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(content if content.endswith("\n") else content + "\n")
    tmp.replace(path)


def ensure_secret(path: Path, content: str) -> None:
    """Make `path` hold exactly `content` with mode 0600."""
    if not path.exists() or path.read_text().strip() != content.strip():
        write_secret(path, content)
    path.chmod(0o600)


def ensure_hd_mnemonic(path: Path) -> bool:
    """Generate a 12-word English mnemonic into `path` unless one is there; True if new."""
    if path.exists():
        path.chmod(0o600)
        return False
    write_secret(path, generate_mnemonic(12, Language.ENGLISH))
    return True
