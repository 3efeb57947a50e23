-- +goose Up
-- The last quiet reading of a vendor key's balance, for a vendor whose
-- answers carry none (the key-wide usage witness, docs/money.md): taken
-- while no call on the key was in flight anywhere, so that every call
-- between two readings is a ledger row of the key with an id in
-- (ledger_high of the first, ledger_high of the second].
CREATE TABLE key_usage_readings (
    account     text        PRIMARY KEY CONSTRAINT key_usage_readings_account_check CHECK (account <> ''), -- the vendor key's id (account_usage)
    balance     bigint      NOT NULL, -- the vendor's balance, in its credits
    ledger_high bigint      NOT NULL, -- the highest credit_ledger id at the reading: every call of the key up to it had ended
    read_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE key_usage_readings;
