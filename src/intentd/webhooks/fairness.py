"""Which due deliveries a dispatcher starts next: a fair share per client (pure).

A client whose endpoints hang (a tarpit answering at the last second of the timeout)
or who has a large backlog must not take the slots every other client's deliveries
need. :func:`fair_share` picks, among the due deliveries each endpoint may start
(the store already applied the per-endpoint limit over every process):

- **a cap per client**: at most ``per_client`` attempts of one client in flight in
  this process (``busy`` counts those already running); so ``max_in_flight /
  per_client`` clients must all hang at once before a slot is missing for another;
- **least loaded first, round-robin**: a client's *k*-th pick ranks at its attempts
  in flight plus *k*, so each claim serves first the clients with the fewest
  attempts running, one delivery each in turn; a client with nothing in flight is
  never behind a busy one;
- within a client, its endpoints in turn as well (each endpoint's earliest due
  delivery, then each one's second ...), so one of its endpoints does not hold back
  its others; earliest due first, then delivery id, for the ties.

It is work-conserving: fewer than ``limit`` picks only when every delivery left out
belongs to a client at its cap. ``adapters.postgres.webhook_store`` implements the same rule in
SQL (so each claim is fair over the whole table, whatever the number of processes);
the unit tests' fake store uses this function.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

__all__ = ["Candidate", "fair_share"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A due delivery its endpoint may start now."""

    delivery_id: int
    endpoint_id: UUID
    client_id: UUID
    due_at: datetime


def fair_share(
    candidates: Iterable[Candidate],
    *,
    limit: int,
    per_client: int,
    busy: Mapping[UUID, int],
) -> list[Candidate]:
    """The candidates to start now, in the order they rank (see the module)."""
    by_endpoint: dict[UUID, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_endpoint[candidate.endpoint_id].append(candidate)
    by_client: dict[UUID, list[tuple[int, Candidate]]] = defaultdict(list)
    for queue in by_endpoint.values():
        queue.sort(key=lambda c: (c.due_at, c.delivery_id))
        for turn, candidate in enumerate(queue, 1):
            by_client[candidate.client_id].append((turn, candidate))
    ranked: list[tuple[int, datetime, int, Candidate]] = []
    for client, turns in by_client.items():
        running = busy.get(client, 0)
        turns.sort(key=lambda t: (t[0], t[1].due_at, t[1].delivery_id))
        for client_turn, (_, candidate) in enumerate(turns[: max(per_client - running, 0)], 1):
            ranked.append(
                (running + client_turn, candidate.due_at, candidate.delivery_id, candidate)
            )
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[: max(limit, 0)]]
