"""A session token creates at most ``api.max_intents_per_session`` intents.

Past the cap a create is 409 ``session_intent_limit``; a retry with an
``Idempotency-Key`` the session already used is not refused by it. The count is read
before each create, so creates of one session racing each other may pass the cap by
their number, which the session's own rate limit (``api.session_rate_limit``) bounds.
"""

from __future__ import annotations

from intentd.adapters.postgres import intent_inserts, intent_store
from intentd.api.context import Services
from intentd.api.problems import ApiProblem
from intentd.api.sessions.tokens import Session

__all__ = ["within_cap"]


async def within_cap(services: Services, session: Session, idempotency: str | None) -> None:
    """409 ``session_intent_limit`` once the session has created its cap of intents,
    unless this create is the retry of one of them."""
    cap = services.settings.api.max_intents_per_session
    async with services.connection() as conn:
        if await intent_store.count_for_session(conn, session.id) < cap:
            return
        if idempotency is not None and await intent_inserts.find_by_idempotency_key(
            conn, session.client_id, idempotency
        ):
            return
    raise ApiProblem(
        409,
        "session_intent_limit",
        f"this session has created its {cap} intents; create a new session for another payment",
    )
