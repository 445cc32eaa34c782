-- intentd: no-transaction
-- intentd schema, version 16: the relayer's float, known before it is spent (issue 20,
-- section 4; docs/execution.md, "The relayer's float").
--
-- relayer_float: one row per (chain, holder, token), written only by the executor that
-- leads the chain (it holds the chain's RPC client and signs): the balance of the relayer
-- (every supported token of the chain, the native coin included) and of the gas tank (the
-- native coin) at block_number, with what is reserved by prefills, owed back to the
-- relayer and asked by PENDING intents, all computed from the tables below at as_of (the
-- database's clock, before the balances were read). The API reads these rows, never the
-- chain; a row older than liquidity.max_age decides nothing. Gas tank rows carry zeros in
-- reserved, owed and pending.
--
-- Applied outside a transaction so that the index on chain_transactions (which the
-- executors write all the time) is built without blocking them; each statement is safe
-- to run again.
CREATE TABLE IF NOT EXISTS relayer_float (
    chain           TEXT NOT NULL,
    holder          TEXT NOT NULL CHECK (holder IN ('relayer', 'gas_tank')),
    token           TEXT NOT NULL CHECK (token ~ '^0x[0-9a-f]{40}$'),
    address         TEXT NOT NULL,
    balance         NUMERIC(78, 0) NOT NULL CHECK (balance >= 0),
    block_number    BIGINT NOT NULL CHECK (block_number >= 0),
    reserved        NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    owed            NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (owed >= 0),
    owed_overdue    INTEGER NOT NULL DEFAULT 0 CHECK (owed_overdue >= 0),
    pending         NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (pending >= 0),
    as_of           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (chain, holder, token)
);

-- The newest block of a confirmed transfer the relayer signed on a chain: a balance read
-- from a node below it is older than what the executor already knows was paid, and is
-- not believed (execution/liquidity.py).
CREATE INDEX CONCURRENTLY IF NOT EXISTS chain_transactions_confirmed_by_signer
    ON chain_transactions (chain, signer, block_number)
    WHERE status = 'confirmed' AND purpose = 'transfer';
