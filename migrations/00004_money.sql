-- The money guard: an account-wide monthly allowance per vendor key, claims
-- that make concurrent workers share one call per input, and per-stage
-- figures on the ledger.

-- +goose Up

-- Credits of one vendor key in one calendar month (UTC), across every job.
CREATE TABLE account_usage (
    account           text        NOT NULL, -- the vendor key's id: sha256 prefix, never the key
    month             date        NOT NULL, -- first day of the month, UTC
    reserved          bigint      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    spent             bigint      NOT NULL DEFAULT 0,
    credits_remaining bigint,               -- the last X-Credits-Remaining the vendor sent
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, month)
);

-- A lookup being bought right now: whoever holds the claim calls the vendor,
-- the others wait for its answer in lookup_cache.
CREATE TABLE lookup_claims (
    tenant     text        NOT NULL,
    stage      text        NOT NULL,
    input_key  text        NOT NULL,
    token      uuid        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, stage, input_key)
);
CREATE INDEX lookup_claims_token ON lookup_claims (token);

ALTER TABLE credit_ledger
    ADD COLUMN account       text,
    ADD COLUMN account_month date,
    ADD COLUMN stage_credits jsonb; -- for bulk calls: {"profile": n, "email": n, "phone": n} by the cost table

CREATE INDEX credit_ledger_account ON credit_ledger (account, account_month);

-- +goose Down
DROP INDEX credit_ledger_account;
ALTER TABLE credit_ledger DROP COLUMN account, DROP COLUMN account_month, DROP COLUMN stage_credits;
DROP TABLE lookup_claims;
DROP TABLE account_usage;
