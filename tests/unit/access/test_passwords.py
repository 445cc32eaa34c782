"""Console passwords: the dummy hash costs what a real one costs."""

from __future__ import annotations

from argon2 import PasswordHasher

from intentd.access.passwords import DUMMY_HASH, check_password, hash_password, needs_rehash


def test_the_dummy_hash_has_the_hashers_parameters() -> None:
    # a sign-in for an unknown email checks against it: a cheaper hash would tell
    # an attacker which emails have accounts
    assert not PasswordHasher().check_needs_rehash(DUMMY_HASH)
    assert not needs_rehash(DUMMY_HASH)


def test_no_password_never_matches_even_the_dummys_own() -> None:
    assert not check_password(None, "intentd: no such account, the same work as a real one")
    stored = hash_password("correct horse battery")
    assert check_password(stored, "correct horse battery")
    assert not check_password(stored, "wrong horse battery")
