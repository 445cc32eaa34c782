"""The one error type of the dev tooling: which component failed, why, and where its log is."""

from pathlib import Path


class InfraError(Exception):
    """A component of the local infrastructure could not be started, checked or stopped."""

    def __init__(self, component: str, message: str, log: Path | None = None) -> None:
        super().__init__(component, message, log)
        self.component = component
        self.message = message
        self.log = log

    def __str__(self) -> str:
        text = f"{self.component}: {self.message}"
        if self.log is not None:
            text += f" (see {self.log})"
        return text
