-- enrichq's unreleased schema changes since 0.2.0 (00002_v0_2_0.sql): one
-- file until the next release.

-- +goose Up

------------------------------------------------------------------------------
-- Charges within the vendor's contract
------------------------------------------------------------------------------

-- credit_ledger.disputed_charge: the charge the vendor's header claimed
-- outside its contract (below 0, or above the most the answer may cost;
-- docs/money.md). The call was settled at the contract's price (charged);
-- NULL: not disputed.
ALTER TABLE credit_ledger ADD COLUMN disputed_charge bigint;

-- No charge, spend or usage is ever negative: a wrapped multiplication or
-- an untrue charge header is refused by the database too, not only by the
-- code that should have held it to the contract.
ALTER TABLE credit_ledger ADD CONSTRAINT credit_ledger_charged_check CHECK (charged >= 0);
ALTER TABLE jobs ADD CONSTRAINT jobs_credits_spent_check CHECK (credits_spent >= 0);
ALTER TABLE account_usage ADD CONSTRAINT account_usage_spent_check CHECK (spent >= 0);
ALTER TABLE tenant_usage ADD CONSTRAINT tenant_usage_spent_check CHECK (spent >= 0);

-- +goose Down
ALTER TABLE tenant_usage DROP CONSTRAINT tenant_usage_spent_check;
ALTER TABLE account_usage DROP CONSTRAINT account_usage_spent_check;
ALTER TABLE jobs DROP CONSTRAINT jobs_credits_spent_check;
ALTER TABLE credit_ledger DROP CONSTRAINT credit_ledger_charged_check;
ALTER TABLE credit_ledger DROP COLUMN disputed_charge;
