-- Reconciliation looks up the earlier sends of a call by its Idempotency-Key
-- within its job (a replay prices the send that was billed; a fresh answer
-- proves the earlier sends were not): (job_id, idempotency_key) serves that
-- and every lookup by job_id, which credit_ledger_job served.

--
-- A worker that finishes a chunk hands the job's next never-dispatched chunk
-- to the queue (store.DispatchNext): job_chunks_undispatched finds it at
-- once, where the primary key would walk every chunk already dispatched.

--
-- Credit reservations and settlements run as one function call each: one
-- round trip, and the job's row (which every call of the job updates) is
-- locked for the function's few statements and its commit, not across the
-- client's round trips of a multi-statement transaction. Both lock the
-- job's row first, then the account's (one order: no deadlock).

--
-- lookup_claims is a table of short-lived locks (an input being bought by one
-- worker, for the length of a lease): UNLOGGED, it costs no WAL and no fsync,
-- twice per chunk. What a crash of Postgres (or a failover) then loses is the
-- claims of the inputs being bought at that moment; the rows' leases are
-- kept, so the cost is at worst a second purchase of an input that two
-- chunks wanted at the very moment of the crash.

--
-- job_rows_job_state goes in 00010 since that migration was amended after an
-- earlier version of it had been published; a database that applied the
-- earlier version still has the index, and loses it here (a no-op
-- elsewhere; 00010's Down recreates it).

-- +goose Up
DROP INDEX IF EXISTS job_rows_job_state;
ALTER TABLE lookup_claims SET UNLOGGED;
CREATE INDEX credit_ledger_job_key ON credit_ledger (job_id, idempotency_key);
DROP INDEX credit_ledger_job;
CREATE INDEX job_chunks_undispatched ON job_chunks (job_id, chunk) WHERE enqueued_at IS NULL;

-- enrichq_reserve holds p_credits for one call against the job's budget and
-- the account's monthly allowance (p_allowance NULL: no cap; p_account NULL:
-- not tracked). outcome: 'ok' (ledger_id set), 'not_found', 'not_running',
-- 'job_budget' or 'account_budget' (spent, reserved and budget say why),
-- 'no_account_row' (the account's row of this month does not exist yet).
-- +goose StatementBegin
CREATE FUNCTION enrichq_reserve(p_job uuid, p_row bigint, p_row_count integer, p_stage text, p_endpoint text,
    p_key text, p_credits bigint, p_ttl_ms bigint, p_account text, p_allowance bigint,
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
    INSERT INTO credit_ledger (job_id, row_id, row_count, stage, endpoint, idempotency_key, reserved, expires_at, account, account_month)
    VALUES (p_job, p_row, p_row_count, p_stage, p_endpoint, p_key, p_credits, now() + p_ttl_ms * interval '1 millisecond',
        p_account, CASE WHEN p_account IS NOT NULL THEN v_month END)
    RETURNING id INTO ledger_id;
    outcome := 'ok';
END
$$;
-- +goose StatementEnd

-- enrichq_close_reservation moves a ledger row from reserved (or unknown,
-- to settled) to p_status, charged p_charged (NULL: the reservation), and
-- moves the job's and the account's credits accordingly. It returns false
-- when the row was closed already (idempotent).
-- +goose StatementBegin
CREATE FUNCTION enrichq_close_reservation(p_id bigint, p_status text, p_charged bigint, p_reported boolean,
    p_remaining bigint, p_error text, p_split jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    l record;
    v_new bigint;
    v_held bigint;
    v_counted bigint;
BEGIN
    SELECT c.id, c.job_id, c.reserved, c.status, coalesce(c.charged, 0) AS charged, c.account, c.account_month INTO l
    FROM credit_ledger c
    WHERE c.id = p_id AND (c.status = 'reserved' OR (c.status = 'unknown' AND p_status = 'settled'))
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    v_new := coalesce(p_charged, l.reserved);
    UPDATE credit_ledger c SET status = p_status, charged = v_new, charge_reported = p_reported,
        credits_remaining = p_remaining, error = p_error, settled_at = now(),
        stage_credits = coalesce(p_split, c.stage_credits)
    WHERE c.id = p_id;
    v_held := CASE WHEN l.status = 'reserved' THEN l.reserved ELSE 0 END;
    v_counted := CASE WHEN l.status = 'unknown' THEN l.charged ELSE 0 END;
    UPDATE jobs j SET credits_reserved = j.credits_reserved - v_held, credits_spent = j.credits_spent + v_new - v_counted,
        updated_at = now()
    WHERE j.id = l.job_id;
    IF l.account IS NOT NULL THEN
        UPDATE account_usage a SET reserved = a.reserved - v_held, spent = a.spent + v_new - v_counted,
            credits_remaining = coalesce(p_remaining, a.credits_remaining), updated_at = now()
        WHERE a.account = l.account AND a.month = l.account_month;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE lookup_claims SET LOGGED;
DROP FUNCTION enrichq_close_reservation(bigint, text, bigint, boolean, bigint, text, jsonb);
DROP FUNCTION enrichq_reserve(uuid, bigint, integer, text, text, text, bigint, bigint, text, bigint);
DROP INDEX job_chunks_undispatched;
CREATE INDEX credit_ledger_job ON credit_ledger (job_id);
DROP INDEX credit_ledger_job_key;
