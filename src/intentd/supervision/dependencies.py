"""What a role depends on, and what a failure means for it (pure).

A :class:`Dependency` is a service a role cannot work without: PostgreSQL, the Kafka
brokers, or one chain's JSON-RPC provider. A :class:`Diagnosis` says what an exception
a task raised means, in one of four kinds:

- :attr:`Kind.OUTAGE`: a dependency did not answer (connection refused or reset, a
  timeout, a node's error). Not the task's fault and not the configuration's: the task
  waits for the dependency and starts again, however long that takes.
- :attr:`Kind.TRANSIENT`: the work lost a race (a serialization failure, a deadlock) or
  met a state that passes; the task starts again after a pause.
- :attr:`Kind.CONFIGURATION`: a definite answer that the configuration is wrong (the
  database refuses the credentials, a token's contract says other decimals). The
  process exits 2 with :attr:`Diagnosis.message`, which names the key.
- :attr:`Kind.BUG`: anything else. The process exits 1 (its supervisor restarts it).

A transient failure is never read as a configuration error: only an answer is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "BUG",
    "KAFKA",
    "POSTGRESQL",
    "TRANSIENT",
    "Dependency",
    "Diagnose",
    "Diagnosis",
    "Kind",
    "rpc",
    "worst",
]


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: str
    """``postgresql``, ``kafka`` or ``rpc``: the ``dependency`` label of the metrics."""
    chain: str = ""
    """The chain of an ``rpc`` dependency (the ``chain`` label); empty otherwise."""

    def __str__(self) -> str:
        return f"{self.kind}:{self.chain}" if self.chain else self.kind


POSTGRESQL = Dependency("postgresql")
KAFKA = Dependency("kafka")


def rpc(chain: str) -> Dependency:
    """The JSON-RPC provider(s) of ``chain`` (every URL of ``chains.<chain>.rpc_urls``)."""
    return Dependency("rpc", chain)


class Kind(StrEnum):
    OUTAGE = "outage"
    """A dependency did not answer: wait for it, then start again."""
    TRANSIENT = "transient"
    """Lost a race or met a passing state: start again after a pause."""
    CONFIGURATION = "configuration"
    """The configuration is wrong (a definite answer): exit 2."""
    BUG = "bug"
    """Anything else: exit 1."""


@dataclass(frozen=True, slots=True)
class Diagnosis:
    kind: Kind
    dependency: Dependency | None = None
    """The dependency that failed (for :attr:`Kind.OUTAGE`)."""
    message: str = ""
    """For :attr:`Kind.CONFIGURATION`: what is wrong, naming the key."""

    @classmethod
    def outage(cls, dependency: Dependency) -> Diagnosis:
        return cls(Kind.OUTAGE, dependency)

    @classmethod
    def configuration(cls, message: str) -> Diagnosis:
        return cls(Kind.CONFIGURATION, message=message)


TRANSIENT = Diagnosis(Kind.TRANSIENT)
BUG = Diagnosis(Kind.BUG)

Diagnose = Callable[[BaseException], Diagnosis]
"""What an exception means (``adapters.diagnosis.diagnose`` knows the libraries')."""


def worst(diagnoses: list[Diagnosis]) -> Diagnosis:
    """The diagnosis of an exception group: a bug if any leaf is one, else a configuration
    error if any is, else the first outage, else transient."""
    for kind in (Kind.BUG, Kind.CONFIGURATION, Kind.OUTAGE):
        for diagnosis in diagnoses:
            if diagnosis.kind is kind:
                return diagnosis
    return TRANSIENT
