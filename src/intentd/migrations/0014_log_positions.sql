-- intentd schema, version 14: the lifecycle's place in the deposits logs.
-- The block of the last chain message the lifecycle applied from each partition of a
-- deposits topic, written before the partition's offset is committed. If retention
-- deletes records of a partition before they are read, the chain is rescanned from
-- this block less the reorg window (lifecycle.gap_recovery).
CREATE TABLE log_positions (
    topic           TEXT NOT NULL,
    partition       INT NOT NULL,
    block_number    BIGINT NOT NULL CHECK (block_number >= 0),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, partition)
);
