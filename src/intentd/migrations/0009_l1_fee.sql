-- intentd schema, version 9: the L1 data fee of our own transactions. On OP-stack
-- chains (BASE) the sender pays it on top of gas (receipt field l1Fee); the gas tank's
-- credit at an intent address must count it, or the credit is overstated and the next
-- sweep's top-up comes up short. NULL: the chain charges none (or mined before this).
ALTER TABLE chain_transactions ADD COLUMN l1_fee NUMERIC(78, 0);
