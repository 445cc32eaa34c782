"""Where the dev tooling keeps its files: everything lives under ``<repo>/.local``."""

import contextlib
import fcntl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from intentd_dev.devinfra.errors import InfraError

_MARKERS = ("pyproject.toml", "contracts/TestToken.sol")


@dataclass(frozen=True)
class Layout:
    """Paths of one checkout. All of them are absolute."""

    root: Path

    @property
    def local(self) -> Path:
        return self.root / ".local"

    @property
    def run(self) -> Path:
        """Pidfiles, logs and state files of the running components."""
        return self.local / "run"

    @property
    def secrets(self) -> Path:
        """Private keys and the HD mnemonic; the directory is 0700, each file 0600."""
        return self.local / "secrets"

    @property
    def build(self) -> Path:
        """Compiled contract artifacts."""
        return self.local / "build"

    @property
    def pg_data(self) -> Path:
        """Data directory of the PostgreSQL server started here (when the machine has none)."""
        return self.local / "pg"

    @property
    def env_file(self) -> Path:
        return self.local / "infra.env"

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"

    def log(self, component: str) -> Path:
        return self.run / f"{component}.log"

    def pidfile(self, component: str) -> Path:
        return self.run / f"{component}.pid"

    def state(self, component: str) -> Path:
        return self.run / f"{component}.json"

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold ``.local/run/infra.lock``, so that two ``up``/``down`` never interleave."""
        self.run.mkdir(parents=True, exist_ok=True)
        with (self.run / "infra.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
            yield

    def make_dirs(self) -> None:
        self.run.mkdir(parents=True, exist_ok=True)
        self.build.mkdir(parents=True, exist_ok=True)
        self.secrets.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.secrets.chmod(0o700)


def find_layout(start: Path | None = None) -> Layout:
    """The checkout that holds `start` (default: the working directory) or this package.

    Raises `InfraError` when neither lies inside an intentd checkout.
    """
    here = (start or Path.cwd()).resolve()
    package = Path(__file__).resolve()
    for candidate in (here, *here.parents, *package.parents):
        if all((candidate / marker).is_file() for marker in _MARKERS):
            return Layout(candidate)
    raise InfraError("layout", f"no intentd checkout (pyproject.toml and contracts/) above {here}")
