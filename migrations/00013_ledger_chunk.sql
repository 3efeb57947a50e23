-- +goose NO TRANSACTION
-- A bulk call's ledger line names its chunk: an erasure rewrites the keys
-- of the bulk calls of the person's chunks, not of every chunk of the
-- person's jobs (a 1,000,000-row job holds 10,000 of them). Lines of
-- before keep chunk NULL and are still found by their job.

-- +goose Up
ALTER TABLE credit_ledger ADD COLUMN IF NOT EXISTS chunk integer; -- a bulk call's chunk; NULL: a single lookup, or a line of before

-- enrichq_reserve with the chunk of a bulk call (the 0.2.0 function, without
-- it, stays for a worker of before).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION enrichq_reserve(p_job uuid, p_row bigint, p_row_count integer, p_stage text, p_endpoint text,
    p_key text, p_credits bigint, p_ttl_ms bigint, p_account text, p_allowance bigint, p_vendor text, p_chunk integer,
    OUT outcome text, OUT ledger_id bigint, OUT state text, OUT spent bigint, OUT reserved bigint, OUT budget bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
    v_found boolean;
BEGIN
    -- 1. The job's row.
    UPDATE jobs j SET credits_reserved = j.credits_reserved + p_credits, updated_at = now()
    WHERE j.id = p_job AND j.state IN ('queued', 'running')
      AND (j.budget_credits IS NULL OR j.credits_spent + j.credits_reserved + p_credits <= j.budget_credits);
    IF NOT FOUND THEN
        SELECT j.state, j.credits_spent, j.credits_reserved, j.budget_credits INTO state, spent, reserved, budget
        FROM jobs j WHERE j.id = p_job;
        IF NOT FOUND THEN
            outcome := 'not_found';
        ELSIF state NOT IN ('queued', 'running') THEN
            outcome := 'not_running';
        ELSE
            outcome := 'job_budget';
        END IF;
        RETURN;
    END IF;
    -- 2. The account's row.
    IF p_account IS NOT NULL THEN
        UPDATE account_usage a SET reserved = a.reserved + p_credits, updated_at = now()
        WHERE a.account = p_account AND a.month = v_month
          AND (p_allowance IS NULL OR a.spent + a.reserved + p_credits <= p_allowance);
        IF NOT FOUND THEN
            -- Give the job's credits back (its row is ours until commit: nobody saw them).
            UPDATE jobs j SET credits_reserved = j.credits_reserved - p_credits WHERE j.id = p_job;
            SELECT a.spent, a.reserved INTO spent, reserved FROM account_usage a WHERE a.account = p_account AND a.month = v_month;
            v_found := FOUND;
            budget := p_allowance;
            outcome := CASE WHEN v_found THEN 'account_budget' ELSE 'no_account_row' END;
            RETURN;
        END IF;
    END IF;
    -- 3. The ledger's row.
    INSERT INTO credit_ledger (job_id, row_id, row_count, stage, endpoint, idempotency_key, reserved, expires_at, account, account_month, vendor, chunk)
    VALUES (p_job, p_row, p_row_count, p_stage, p_endpoint, p_key, p_credits, now() + p_ttl_ms * interval '1 millisecond',
        p_account, CASE WHEN p_account IS NOT NULL THEN v_month END, p_vendor, p_chunk)
    RETURNING id INTO ledger_id;
    outcome := 'ok';
END
$$;
-- +goose StatementEnd

-- It serves the lines of before too (job_id = … AND chunk IS NULL): the
-- index by the job alone goes, so that no plan reads a job's bulk lines to
-- find one chunk's.
CREATE INDEX CONCURRENTLY IF NOT EXISTS credit_ledger_job_chunk_bulk ON credit_ledger (job_id, chunk) WHERE row_id IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS credit_ledger_job_bulk;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS credit_ledger_job_bulk ON credit_ledger (job_id) WHERE row_id IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS credit_ledger_job_chunk_bulk;
DROP FUNCTION IF EXISTS enrichq_reserve(uuid, bigint, integer, text, text, text, bigint, bigint, text, bigint, text, integer);
ALTER TABLE credit_ledger DROP COLUMN IF EXISTS chunk;
