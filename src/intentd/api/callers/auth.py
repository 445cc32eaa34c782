"""Who is calling: API keys and session tokens, checked per request, plus the rate limit.

Verified keys (and unknown hashes) are cached for ``api.key_cache_ttl`` seconds,
so a request costs no database read for authentication; a revoked key stops
working on every replica within that time. Secrets are never logged or echoed.

Limits (docs/api.md, "Rate limits"): a key's requests spend its bucket; a session
token's spend a bucket of the session (``api.session_rate_limit``), never its key's.
A request without a verified key in the cache (missing, malformed, unknown, not yet
cached) first spends a bucket of its source (``api.source_rate_limit``,
``api.trusted_proxies``; an IPv4 address or an IPv6 /64, ``sources.source_bucket``),
so a flood of made-up keys gets 429s, not database reads.
Verified keys and unknown ones are cached apart, each bounded and least recently
used first out: made-up keys never push a valid key out. A lookup waits at most
``api.db_acquire_timeout`` for a connection, then answers 503 with ``Retry-After``;
with the database away it answers 503 ``database_unavailable`` (never 401: a key
is unknown only when the database said so).

Scopes (``access.scopes``): :meth:`Caller.require_scope` answers 403
``insufficient_scope`` when a restricted key calls an operation its scopes do not
cover; a key without scopes (every key made before them) may call everything.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from starlette.types import Scope

from intentd.access.scopes import ANY_KEY, required_scope, scope_allows
from intentd.adapters.postgres import Connection, api_keys
from intentd.adapters.postgres.api_keys import ApiKey
from intentd.api.callers.lru import Lru
from intentd.api.callers.ratelimit import RateLimiter, retry_after_seconds
from intentd.api.callers.sources import source_address, source_bucket
from intentd.api.connections import Database
from intentd.api.problems import ApiProblem
from intentd.api.sessions.tokens import PREFIX as SESSION_PREFIX
from intentd.api.sessions.tokens import Session, SessionError, verify_session
from intentd.credentials import allowed_networks, hash_key, looks_like_key
from intentd.settings import ChainConfig, Settings

__all__ = ["Authenticator", "Caller"]

_K = TypeVar("_K", str, UUID)
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

    def require_scope(self, method: str, template: str) -> None:
        """403 ``insufficient_scope`` unless the key's scopes cover the operation
        ``method template`` (its route's path template)."""
        need = required_scope(method, template)
        if scope_allows(self.key.scopes, need):
            return
        held = ", ".join(sorted(self.key.scopes or ())) or "none"
        wanted = need if need is not None and need != ANY_KEY else "every scope"
        raise ApiProblem(
            403,
            "insufficient_scope",
            f"this key's scopes ({held}) do not allow {method} {template}: it needs {wanted}",
            headers={
                "WWW-Authenticate": f'Bearer realm="intentd", error="insufficient_scope",'
                f' scope="{wanted}"'
            },
        )

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
        database: Database,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._database = database
        self._clock = clock
        self._wall_clock = wall_clock
        api = settings.api
        self._ttl = api.key_cache_ttl
        self._known: Lru[str | UUID, tuple[float, ApiKey]] = Lru(api.key_cache_size)
        self._unknown: Lru[str | UUID, float] = Lru(api.key_miss_cache_size)
        self._limiter = RateLimiter(api.rate_limit_shares, size=2 * api.key_cache_size)
        self._sources = RateLimiter(1, size=api.key_miss_cache_size)
        self._proxies = list(api.trusted_proxies)
        secret = settings.session_secret
        self._session_secret = secret.get_secret_value().encode() if secret else None

    @property
    def sessions_enabled(self) -> bool:
        return self._session_secret is not None

    def source_of(self, scope: Scope) -> str | None:
        """The request's source address (``api.trusted_proxies``)."""
        client = scope.get("client")
        forwarded = [
            value.decode("latin-1")
            for name, value in scope["headers"]
            if name == b"x-forwarded-for"
        ]
        return source_address(client[0] if client else None, forwarded, self._proxies)

    async def api_key(self, authorization: str | None, source: str | None = None) -> Caller:
        """The caller of an API-key endpoint; raises a 401, 429 or 503 problem. Without
        a ``source`` (a caller inside the process) no source limit applies."""
        try:
            token = _bearer(authorization)
            if token.startswith(SESSION_PREFIX):
                raise _unauthorized(
                    "session_token_not_accepted",
                    "this endpoint needs an API key; session tokens work on /api/v1/session only",
                )
            if not looks_like_key(token):
                raise _unauthorized("invalid_api_key", "the API key is not valid")
        except ApiProblem:
            self._charge(source)
            raise
        key = await self._cached(hash_key(token), api_keys.find_by_hash, source)
        return self._admit(key, None)

    async def session(self, authorization: str | None, source: str | None = None) -> Caller:
        """The caller of a session endpoint; raises a 401, 429 or 503 problem."""
        if self._session_secret is None:
            raise ApiProblem(
                503, "sessions_disabled", "sessions are not configured on this deployment"
            )
        try:
            token = _bearer(authorization)
            if not token.startswith(SESSION_PREFIX):
                raise _unauthorized(
                    "session_token_required", "this endpoint needs a session token, not an API key"
                )
            try:
                session = verify_session(token, self._session_secret, self._wall_clock())
            except SessionError as exc:
                raise _unauthorized(exc.code, str(exc)) from None
        except ApiProblem:
            self._charge(source)
            raise
        key = await self._cached(session.key_id, api_keys.find_by_id, source)
        return self._admit(key, session)

    def _charge(self, source: str | None) -> None:
        """Spend a token of ``source``'s bucket; a 429 problem if it has none."""
        if source is None:
            return
        limit = self._settings.api.source_rate_limit
        wait = self._sources.check(source_bucket(source), limit, self._clock())
        if wait:
            raise ApiProblem(
                429,
                "source_rate_limited",
                f"more than {limit} requests per second without a valid key from this address",
                headers={"Retry-After": str(retry_after_seconds(wait))},
            )

    def _admit(self, key: ApiKey | None, session: Session | None) -> Caller:
        if key is None:
            raise _unauthorized("invalid_api_key", "the API key is not valid")
        if not key.active:
            raise _unauthorized("api_key_revoked", "the API key was revoked")
        if session is not None:
            limit = self._settings.api.session_rate_limit
            bucket: Hashable = ("session", session.id)
            code, holder = "session_rate_limited", "session token"
        else:
            limit = key.rate_limit or self._settings.api.default_rate_limit
            bucket, code, holder = key.id, "rate_limited", "key"
        wait = self._limiter.check(bucket, limit, self._clock())
        if wait:
            raise ApiProblem(
                429,
                code,
                f"more than {limit} requests per second with this {holder}",
                headers={"Retry-After": str(retry_after_seconds(wait))},
            )
        networks = allowed_networks(key.mode, self._settings.environment)
        return Caller(key, networks, session)

    async def _cached(
        self,
        lookup_key: _K,
        find: Callable[[Connection, _K], Awaitable[ApiKey | None]],
        source: str | None,
    ) -> ApiKey | None:
        now = self._clock()
        known = self._known.get(lookup_key)
        if known is not None and known[0] > now:
            return known[1]
        self._charge(source)
        unknown_until = self._unknown.get(lookup_key)
        if unknown_until is not None and unknown_until > now:
            return None
        key = await self._lookup(lookup_key, find)
        if key is None:
            self._known.pop(lookup_key)
            self._unknown.put(lookup_key, now + self._ttl)
        else:
            self._unknown.pop(lookup_key)
            self._known.put(lookup_key, (now + self._ttl, key))
        return key

    async def _lookup(
        self, lookup_key: _K, find: Callable[[Connection, _K], Awaitable[ApiKey | None]]
    ) -> ApiKey | None:
        async with self._database.connection() as conn:
            return await find(conn, lookup_key)
