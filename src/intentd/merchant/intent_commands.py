"""The lifecycle's cancel and refund as the API and the console run them.

:class:`IntentCommands` is built once per app by the composition root
(``composition.api``): the process's :class:`~intentd.lifecycle.chain_book.ChainBook`
and how a unit of work is opened on a connection. A route never builds either; it runs
a command on a connection whose transaction it holds (``merchant.refunds``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from intentd.adapters.postgres import Connection
from intentd.lifecycle import commands
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.ports import UnitOfWork

__all__ = ["IntentCommands"]


@dataclass(frozen=True, slots=True)
class IntentCommands:
    book: ChainBook
    unit_of_work: Callable[[Connection], UnitOfWork]
    """The lifecycle's unit of work on a connection, inside the caller's transaction."""

    async def run(
        self, conn: Connection, command: commands.Command, intent_id: int, *, now: datetime
    ) -> commands.Answer:
        """Run ``command`` on the intent in ``conn``'s transaction; raises
        :class:`~intentd.lifecycle.commands.CommandRefused` when its state does not allow it."""
        run = commands.cancel if command is commands.Command.CANCEL else commands.refund
        return await run(self.unit_of_work(conn), self.book, intent_id, now=now)
