"""Who is calling: API keys and session tokens, checked per request, plus the rate limit.

Verified keys (and unknown hashes) are cached for ``api.key_cache_ttl`` seconds,
so a request costs no database read for authentication; a revoked key stops
working on every replica within that time. Secrets are never logged or echoed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from intentd.adapters import api_keys
from intentd.adapters.api_keys import ApiKey
from intentd.adapters.postgres import Connection, Pool
from intentd.api.problems import ApiProblem
from intentd.api.ratelimit import RateLimiter, retry_after_seconds
from intentd.api.sessions import PREFIX as SESSION_PREFIX
from intentd.api.sessions import Session, SessionError, verify_session
from intentd.credentials import allowed_networks, hash_key, looks_like_key
from intentd.settings import ChainConfig, Settings

__all__ = ["Authenticator", "Caller"]

_CACHE_LIMIT = 100_000
_K = TypeVar("_K")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="intentd"'}


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller: its key, the network classes it may use, its session."""

    key: ApiKey
    networks: frozenset[str]
    session: Session | None = None

    @property
    def client_id(self) -> UUID:
        return self.key.client_id

    def may_use(self, chain: ChainConfig) -> bool:
        return chain.network in self.networks

    def require(self, chain: ChainConfig, field: str) -> None:
        """403 ``network_class_mismatch`` unless the key may use ``chain``."""
        if not self.may_use(chain):
            raise ApiProblem(
                403,
                "network_class_mismatch",
                f"a {self.key.mode} key cannot use {chain.name} (a {chain.network} network)",
                field=field,
            )


def _unauthorized(code: str, detail: str) -> ApiProblem:
    return ApiProblem(401, code, detail, headers=_CHALLENGE)


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise _unauthorized("missing_credentials", "send Authorization: Bearer <API key>")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("invalid_authorization", "the Authorization scheme must be Bearer")
    return token.strip()


class Authenticator:
    def __init__(
        self,
        settings: Settings,
        pool: Pool,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._pool = pool
        self._clock = clock
        self._wall_clock = wall_clock
        self._ttl = settings.api.key_cache_ttl
        self._by_hash: dict[str, tuple[float, ApiKey | None]] = {}
        self._by_id: dict[UUID, tuple[float, ApiKey | None]] = {}
        self._limiter = RateLimiter(settings.api.rate_limit_shares)
        secret = settings.session_secret
        self._session_secret = secret.get_secret_value().encode() if secret else None

    @property
    def sessions_enabled(self) -> bool:
        return self._session_secret is not None

    async def api_key(self, authorization: str | None) -> Caller:
        """The caller of an API-key endpoint; raises a 401 or 429 problem."""
        token = _bearer(authorization)
        if token.startswith(SESSION_PREFIX):
            raise _unauthorized(
                "session_token_not_accepted",
                "this endpoint needs an API key; session tokens work on /api/v1/session only",
            )
        if not looks_like_key(token):
            raise _unauthorized("invalid_api_key", "the API key is not valid")
        key = await self._cached(self._by_hash, hash_key(token), api_keys.find_by_hash)
        return self._admit(key, None)

    async def session(self, authorization: str | None) -> Caller:
        """The caller of a session endpoint; raises a 401, 429 or 503 problem."""
        token = _bearer(authorization)
        if self._session_secret is None:
            raise ApiProblem(
                503, "sessions_disabled", "sessions are not configured on this deployment"
            )
        if not token.startswith(SESSION_PREFIX):
            raise _unauthorized(
                "session_token_required", "this endpoint needs a session token, not an API key"
            )
        try:
            session = verify_session(token, self._session_secret, self._wall_clock())
        except SessionError as exc:
            raise _unauthorized(exc.code, str(exc)) from None
        key = await self._cached(self._by_id, session.key_id, api_keys.find_by_id)
        return self._admit(key, session)

    def _admit(self, key: ApiKey | None, session: Session | None) -> Caller:
        if key is None:
            raise _unauthorized("invalid_api_key", "the API key is not valid")
        if not key.active:
            raise _unauthorized("api_key_revoked", "the API key was revoked")
        limit = key.rate_limit or self._settings.api.default_rate_limit
        wait = self._limiter.check(key.id, limit, self._clock())
        if wait:
            raise ApiProblem(
                429,
                "rate_limited",
                f"more than {limit} requests per second with this key",
                headers={"Retry-After": str(retry_after_seconds(wait))},
            )
        networks = allowed_networks(key.mode, self._settings.environment)
        return Caller(key, networks, session)

    async def _cached(
        self,
        cache: dict[_K, tuple[float, ApiKey | None]],
        lookup_key: _K,
        find: Callable[[Connection, _K], Awaitable[ApiKey | None]],
    ) -> ApiKey | None:
        now = self._clock()
        hit = cache.get(lookup_key)
        if hit is not None and hit[0] > now:
            return hit[1]
        async with self._pool.acquire() as conn:
            key = await find(conn, lookup_key)
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[lookup_key] = (now + self._ttl, key)
        return key
