-- Reconciliation looks up the earlier sends of a call by its Idempotency-Key
-- within its job (a replay prices the send that was billed; a fresh answer
-- proves the earlier sends were not): (job_id, idempotency_key) serves that
-- and every lookup by job_id, which credit_ledger_job served.

--
-- A worker that finishes a chunk hands the job's next never-dispatched chunk
-- to the queue (store.DispatchNext): job_chunks_undispatched finds it at
-- once, where the primary key would walk every chunk already dispatched.

-- +goose Up
CREATE INDEX credit_ledger_job_key ON credit_ledger (job_id, idempotency_key);
DROP INDEX credit_ledger_job;
CREATE INDEX job_chunks_undispatched ON job_chunks (job_id, chunk) WHERE enqueued_at IS NULL;

-- +goose Down
DROP INDEX job_chunks_undispatched;
CREATE INDEX credit_ledger_job ON credit_ledger (job_id);
DROP INDEX credit_ledger_job_key;
