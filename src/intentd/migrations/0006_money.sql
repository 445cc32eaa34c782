-- intentd schema, version 6: money safety (issue 8, items 3 and 4).
--
-- intents.refunded: base units of credited tokenIn that the intent has already
-- decided to give back to the user (an over-funded intent's excess at initiation,
-- the rest when the prefill fails or the intent expires). A later refund of credited
-- tokenIn is only ever of received - refunded, so nothing is refunded twice.
ALTER TABLE intents
    ADD COLUMN refunded NUMERIC(78, 0) NOT NULL DEFAULT 0
        CHECK (refunded >= 0 AND refunded <= received);
