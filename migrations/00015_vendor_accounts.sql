-- What enrichq learns of the vendor behind each key, and the marks on the
-- ledger that reconciliation reads.
--
-- vendor_accounts: one row per vendor key (its id, a SHA-256 prefix: never the
-- key). honours_keys is NULL until the vendor is seen to replay an
-- Idempotency-Key; only then may a fresh retry settle earlier sends of its key
-- at 0. credit_ledger.replay_price: the call was answered as a replay, and
-- the cost table prices the replayed answer at this many credits (what the
-- earlier, billed send of the key cost). credit_ledger.sent_at: the call was
-- about to leave (set right before the request is written, and only while
-- the reservation is open): a reservation without it was never sent, and is
-- released rather than counted at its worst case.

-- +goose Up
CREATE TABLE vendor_accounts (
    account      text        PRIMARY KEY CHECK (account <> ''), -- config.VendorAccount: sha256 prefix of the key
    honours_keys boolean,                                        -- NULL: not known yet
    learned_at   timestamptz,                                    -- when honours_keys was learned
    learned_from bigint,                                         -- the ledger id of the replay it was learned from
    created_at   timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE credit_ledger
    ADD COLUMN replay_price bigint CHECK (replay_price >= 0),
    ADD COLUMN sent_at      timestamptz;

-- A job's open calls (the explain step, and the finisher's check of them).
CREATE INDEX credit_ledger_job_open ON credit_ledger (job_id) WHERE status IN ('reserved', 'unknown');

-- +goose Down
DROP INDEX credit_ledger_job_open;
ALTER TABLE credit_ledger DROP COLUMN replay_price, DROP COLUMN sent_at;
DROP TABLE vendor_accounts;
