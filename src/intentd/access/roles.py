"""Console roles and the one table of what each may do (docs/console.md, Roles).

Every console route names the :class:`Permission` it needs; :func:`allowed` is the only
check. A permission is never implied by another: the table lists each one a role has.
The refund threshold is not a permission: a refund above it by anyone with
``payments.refund`` waits for a second user with ``refunds.approve``
(:mod:`intentd.access.approvals`).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["PERMISSIONS", "Permission", "Role", "allowed"]


class Role(StrEnum):
    OWNER = "owner"
    """Everything, including the team (users, roles) and the client's policies."""
    ADMIN = "admin"
    """Keys, webhooks, refunds and their approval; reads the team and the audit log."""
    DEVELOPER = "developer"
    """Keys and webhooks; reads everything else a merchant's engineer needs."""
    SUPPORT = "support"
    """Reads; cancels and refunds (above the threshold they wait for an approval)."""
    VIEWER = "viewer"
    """Reads only."""


class Permission(StrEnum):
    PAYMENTS_READ = "payments.read"
    """Overview, payments, a payment's detail, pending approvals."""
    PAYMENTS_CANCEL = "payments.cancel"
    PAYMENTS_REFUND = "payments.refund"
    REFUNDS_APPROVE = "refunds.approve"
    """Approve or reject another user's (or a key's) refund waiting for approval."""
    WEBHOOKS_READ = "webhooks.read"
    WEBHOOKS_WRITE = "webhooks.write"
    """Create, change, delete, rotate, test, redeliver, recover."""
    KEYS_READ = "keys.read"
    KEYS_WRITE = "keys.write"
    """Create (the secret shown once) and revoke API keys."""
    EVENTS_READ = "events.read"
    REPORTS_READ = "reports.read"
    AUDIT_READ = "audit.read"
    """Read and export the audit log."""
    TEAM_READ = "team.read"
    TEAM_WRITE = "team.write"
    """Invite users, change roles, disable, make sign-in links."""
    SETTINGS_WRITE = "settings.write"
    """The client's policies (the refund approval threshold)."""


_READ = frozenset(
    {
        Permission.PAYMENTS_READ,
        Permission.WEBHOOKS_READ,
        Permission.EVENTS_READ,
        Permission.REPORTS_READ,
    }
)
_ENGINEERING = frozenset(
    {
        Permission.WEBHOOKS_WRITE,
        Permission.KEYS_READ,
        Permission.KEYS_WRITE,
    }
)
_MONEY = frozenset({Permission.PAYMENTS_CANCEL, Permission.PAYMENTS_REFUND})

PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.OWNER: frozenset(Permission),
    Role.ADMIN: _READ
    | _ENGINEERING
    | _MONEY
    | {Permission.REFUNDS_APPROVE, Permission.AUDIT_READ, Permission.TEAM_READ},
    Role.DEVELOPER: _READ | _ENGINEERING,
    Role.SUPPORT: _READ | _MONEY,
    Role.VIEWER: _READ,
}
"""The permission table (docs/console.md keeps a copy; a unit test keeps them equal)."""


def allowed(role: Role, permission: Permission) -> bool:
    return permission in PERMISSIONS[role]
