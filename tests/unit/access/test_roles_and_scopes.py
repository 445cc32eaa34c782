"""The permission table and the scope table: what each role and each scope opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentd.access.roles import PERMISSIONS, Permission, Role, allowed
from intentd.access.scopes import ANY_KEY, Scope, parse_scopes, required_scope, scope_allows

READS = {
    Permission.PAYMENTS_READ,
    Permission.WEBHOOKS_READ,
    Permission.EVENTS_READ,
    Permission.REPORTS_READ,
}


def test_every_role_reads_and_only_the_owner_manages_the_team() -> None:
    for role in Role:
        assert PERMISSIONS[role] >= READS, role
    assert {r for r in Role if allowed(r, Permission.TEAM_WRITE)} == {Role.OWNER}
    assert {r for r in Role if allowed(r, Permission.SETTINGS_WRITE)} == {Role.OWNER}
    assert PERMISSIONS[Role.OWNER] == frozenset(Permission)


def test_the_roles_of_the_issue() -> None:
    # admin: keys, webhooks, refunds; developer: keys, webhooks, read;
    # support: read, cancel, refunds; viewer: read.
    assert PERMISSIONS[Role.VIEWER] == READS
    assert PERMISSIONS[Role.SUPPORT] == READS | {
        Permission.PAYMENTS_CANCEL,
        Permission.PAYMENTS_REFUND,
    }
    assert PERMISSIONS[Role.DEVELOPER] == READS | {
        Permission.WEBHOOKS_WRITE,
        Permission.KEYS_READ,
        Permission.KEYS_WRITE,
    }
    admin = PERMISSIONS[Role.ADMIN]
    assert {Permission.KEYS_WRITE, Permission.WEBHOOKS_WRITE, Permission.PAYMENTS_REFUND} <= admin
    assert Permission.REFUNDS_APPROVE in admin
    assert Permission.TEAM_WRITE not in admin
    approvers = {r for r in Role if allowed(r, Permission.REFUNDS_APPROVE)}
    assert approvers == {Role.OWNER, Role.ADMIN}


def test_every_permission_is_held_by_someone_and_money_never_by_a_viewer() -> None:
    for permission in Permission:
        assert any(allowed(r, permission) for r in Role), permission
    for permission in (Permission.PAYMENTS_REFUND, Permission.PAYMENTS_CANCEL):
        assert not allowed(Role.VIEWER, permission)
        assert not allowed(Role.DEVELOPER, permission)


@pytest.mark.parametrize(
    ("method", "template", "need"),
    [
        ("GET", "/api/v1/intents", Scope.INTENTS_READ),
        ("POST", "/api/v1/intents", Scope.INTENTS_WRITE),
        ("POST", "/api/v1/intents/{intent_address}/refund", Scope.REFUNDS),
        ("POST", "/api/v1/intents/{intent_address}/cancel", Scope.REFUNDS),
        ("GET", "/api/v1/events", Scope.EVENTS_READ),
        ("DELETE", "/api/v1/webhooks/{endpoint_id}", Scope.WEBHOOKS),
        ("GET", "/api/v1/reports/payments.csv", Scope.REPORTS_READ),
        ("GET", "/api/v1/chains", ANY_KEY),
        ("GET", "/api/v1/no-such-route", None),
        ("GET", "/api/v1/reportsx", None),
    ],
)
def test_required_scope(method: str, template: str, need: object) -> None:
    assert required_scope(method, template) == need


def test_a_key_without_scopes_may_do_everything_and_a_restricted_one_only_its_own() -> None:
    assert scope_allows(None, Scope.REFUNDS)
    assert scope_allows(None, None)  # an operation outside the table: full keys only
    assert not scope_allows({"intents:read"}, None)
    assert scope_allows({"intents:read"}, ANY_KEY)
    assert scope_allows({"intents:read"}, Scope.INTENTS_READ)
    assert not scope_allows({"intents:read"}, Scope.INTENTS_WRITE)
    assert not scope_allows(set(), Scope.INTENTS_READ)


def test_parse_scopes() -> None:
    assert parse_scopes(["intents:read,refunds", " webhooks "]) == {
        Scope.INTENTS_READ,
        Scope.REFUNDS,
        Scope.WEBHOOKS,
    }
    with pytest.raises(ValueError, match="unknown scope 'refund'"):
        parse_scopes(["refund"])
    with pytest.raises(ValueError, match="at least one"):
        parse_scopes([","])


def test_the_docs_table_of_roles_is_the_codes() -> None:
    """docs/console.md, Roles: one row per permission, one column per role."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "console.md").read_text()
    section = text.split("## Roles", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        permission = Permission(cells[0].split("`")[1])
        documented[permission] = {
            role for role, cell in zip(Role, cells[1:], strict=True) if cell == "yes"
        }
    assert documented == {p: {r for r in Role if allowed(r, p)} for p in Permission}
