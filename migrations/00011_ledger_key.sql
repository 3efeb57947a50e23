-- Reconciliation looks up the earlier sends of a call by its Idempotency-Key
-- within its job (a replay prices the send that was billed; a fresh answer
-- proves the earlier sends were not): (job_id, idempotency_key) serves that
-- and every lookup by job_id, which credit_ledger_job served.

-- +goose Up
CREATE INDEX credit_ledger_job_key ON credit_ledger (job_id, idempotency_key);
DROP INDEX credit_ledger_job;

-- +goose Down
CREATE INDEX credit_ledger_job ON credit_ledger (job_id);
DROP INDEX credit_ledger_job_key;
