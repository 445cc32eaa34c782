"""How the migration runner reads a file: in a transaction or not, and its statements."""

from __future__ import annotations

import pytest

from intentd.adapters.postgres import available_migrations, split_statements


def test_statements_split_at_semicolons_outside_quotes_comments_and_bodies() -> None:
    sql = """-- intentd: no-transaction
-- a comment; with a semicolon
SET lock_timeout = '5s';
CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.x := 'a;b';
    RETURN NEW;
END
$$;
/* a block; comment */ SELECT $tag$ ; $tag$, 'it''s; fine', "odd;name" FROM t;
-- only a comment;
"""
    statements = split_statements(sql)
    assert len(statements) == 3
    assert statements[0].endswith("SET lock_timeout = '5s'")
    assert statements[1].startswith("CREATE FUNCTION") and statements[1].endswith("$$")
    assert "NEW.x := 'a;b';" in statements[1]
    assert statements[2].endswith('"odd;name" FROM t')


def test_an_unterminated_dollar_quote_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\$\$"):
        split_statements("CREATE FUNCTION f() AS $$ BEGIN")


def test_only_files_marked_on_their_first_line_run_outside_a_transaction() -> None:
    outside = [m for m in available_migrations() if not m.transactional]
    assert 13 in {m.version for m in outside}
    assert all(m.sql.startswith("-- intentd: no-transaction\n") for m in outside)
    # Each statement is safe to run again (the file is applied again after a failure).
    for migration in outside:
        for statement in split_statements(migration.sql):
            code = " ".join(line for line in statement.split("\n") if not line.startswith("--"))
            assert any(
                guard in code for guard in ("IF NOT EXISTS", "OR REPLACE", "SET ", "RESET ")
            ), (migration.version, code)
