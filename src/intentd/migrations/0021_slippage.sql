-- intentd: no-transaction
-- intentd schema, version 18: slippage, and price moves between creation and payment
-- (issue 20, section 2; docs/pricing.md, "Slippage").
--
-- An intent whose amount was converted at a price (an amount in USD, or in another
-- priced symbol than tokenIn) owes its recipient owed_amount of owed_symbol; it is
-- revalued at every credit of a payment (domain/valuation.py): total_due may be raised
-- and amount_out is the owed amount at the credit's prices. prices: the prices it was
-- created at (as its quote showed them); valuation: its last revaluation (base units);
-- awaiting_price: a payment was credited while no price could be trusted, the intent
-- stays PENDING until the lifecycle values it. Older intents have none of these (NULL,
-- false): they are not revalued, as before. Adding nullable columns and a constant
-- default rewrites nothing.
ALTER TABLE intents
    ADD COLUMN IF NOT EXISTS owed_amount NUMERIC CHECK (owed_amount > 0),
    ADD COLUMN IF NOT EXISTS owed_symbol TEXT,
    ADD COLUMN IF NOT EXISTS prices JSONB,
    ADD COLUMN IF NOT EXISTS valuation JSONB,
    ADD COLUMN IF NOT EXISTS awaiting_price BOOLEAN NOT NULL DEFAULT false;

-- deposits.valuation: the prices a credited deposit of a revalued intent was valued at
-- (its Rate: tokenIn's and the owed symbol's USD prices, and the feeds' rounds), so a
-- deposit credited again after a reorg moved it decides as it did the first time, and
-- the chaos run checks each outcome against the prices it was decided at. NULL: not
-- revalued, or credited while no price could be trusted.
ALTER TABLE deposits ADD COLUMN IF NOT EXISTS valuation JSONB;

-- The lifecycle's sweep of intents awaiting a price (lifecycle/awaiting.py): a partial
-- index, empty but for the few intents paid during a price outage.
CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_awaiting_price ON intents (id)
    WHERE awaiting_price AND status = 'PENDING';
