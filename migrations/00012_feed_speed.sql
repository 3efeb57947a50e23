-- Speed (issue 5): the results feed's advance costs less.
--
-- 1. The results feed's foreign key from job_id to jobs goes, for the reason
-- 00010 gave for the result tables' own.
--
-- results_feed_advance() inserts one feed line per result and no-match
-- marker, and each line's foreign-key check took a KEY SHARE lock on its
-- job's one jobs row, which every credit reservation and settlement of the
-- running job updates. Measured on the ceiling run (100,000 rows, bulk):
-- the scheduler's two advances during the run took 4.1 s each for about
-- 21,000 lines (0.9 s of a 3 s advance of 180,000 lines, run alone, was the
-- check's trigger), and while an advance was open every reservation and
-- settlement of the job had to fold that lock into a MultiXact.
--
-- The key was redundant: job_id is copied from the result, whose row_id
-- references job_rows, whose job_id references jobs. Deleting a job (which
-- enrichq itself never does) cascades to its rows and results; its feed
-- lines stay, and the results_feed view, which joins job_rows, no longer
-- shows them.
--
-- 2. results_feed_advance() inserts without ON CONFLICT (a speculative insertion
-- per line), its NOT EXISTS already leaving out what earlier advances logged,
-- and sorts in memory. That needs READ COMMITTED (a snapshot taken after the
-- turn): in another isolation level it says so and does nothing. Run alone on the 180,000 lines of a 100,000-row job:
-- 2.6 s -> 1.7 s.

-- +goose Up
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_job_id_fkey;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION results_feed_advance() RETURNS bigint
LANGUAGE plpgsql
-- The sort of a big advance (180,000 lines for a 100,000-row job) in memory, not on disk.
SET work_mem = '64MB'
AS $$
DECLARE
    v_since   xid8;
    v_horizon xid8;
    v_logged  bigint;
BEGIN
    -- Each statement below must see what earlier advances committed before this one took
    -- its turn: a new snapshot per statement, READ COMMITTED (autocommit, as documented).
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'results_feed_advance() runs at READ COMMITTED only (call it in autocommit), not in a % transaction',
            upper(current_setting('transaction_isolation')) USING ERRCODE = '25001';
    END IF;
    -- Take the turn. Positions handed out below commit before the next advance gets it.
    SELECT s.horizon INTO v_since FROM results_feed_state s WHERE s.singleton FOR UPDATE;
    -- Taken before the rows are read (each statement here takes a newer snapshot): every
    -- transaction older than this has ended, so its committed rows are visible below.
    v_horizon := pg_snapshot_xmin(pg_current_snapshot());

    INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq)
    SELECT j.tenant, x.job_id, x.row_id, x.kind, x.stage, x.seq
    FROM (
        SELECT job_id, row_id, 'profile' AS kind, 'profile' AS stage, seq, xact FROM profile_results WHERE xact >= v_since
        UNION ALL
        SELECT job_id, row_id, 'email', 'email', seq, xact FROM email_results WHERE xact >= v_since
        UNION ALL
        SELECT job_id, row_id, 'phone', 'phone', seq, xact FROM phone_results WHERE xact >= v_since
        UNION ALL
        SELECT job_id, row_id, 'no_match', stage, seq, xact FROM no_matches WHERE xact >= v_since
    ) x
    JOIN jobs j ON j.id = x.job_id
    -- Lines logged by earlier advances: they committed before this one took its turn, so
    -- this statement's snapshot sees them all (no ON CONFLICT needed; the unique key stays
    -- as a guard).
    WHERE NOT EXISTS (SELECT 1 FROM results_feed_log l WHERE l.kind = x.kind AND l.source_seq = x.seq)
    -- A transaction's lines together; a row's in stage order.
    ORDER BY x.xact, x.row_id, array_position(ARRAY['profile', 'email', 'phone'], x.stage), x.kind;
    GET DIAGNOSTICS v_logged = ROW_COUNT;

    IF v_horizon > v_since THEN
        UPDATE results_feed_state SET horizon = v_horizon, advanced_at = now() WHERE singleton;
    END IF;
    RETURN v_logged;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION results_feed_advance() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_since   xid8;
    v_horizon xid8;
    v_logged  bigint;
BEGIN
    -- Take the turn. Positions handed out below commit before the next advance gets it.
    SELECT s.horizon INTO v_since FROM results_feed_state s WHERE s.singleton FOR UPDATE;
    -- Taken before the rows are read (each statement here takes a newer snapshot): every
    -- transaction older than this has ended, so its committed rows are visible below.
    v_horizon := pg_snapshot_xmin(pg_current_snapshot());

    INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq)
    SELECT j.tenant, x.job_id, x.row_id, x.kind, x.stage, x.seq
    FROM (
        SELECT job_id, row_id, 'profile' AS kind, 'profile' AS stage, seq, xact FROM profile_results WHERE xact >= v_since
        UNION ALL
        SELECT job_id, row_id, 'email', 'email', seq, xact FROM email_results WHERE xact >= v_since
        UNION ALL
        SELECT job_id, row_id, 'phone', 'phone', seq, xact FROM phone_results WHERE xact >= v_since
        UNION ALL
        SELECT job_id, row_id, 'no_match', stage, seq, xact FROM no_matches WHERE xact >= v_since
    ) x
    JOIN jobs j ON j.id = x.job_id
    WHERE NOT EXISTS (SELECT 1 FROM results_feed_log l WHERE l.kind = x.kind AND l.source_seq = x.seq)
    -- A transaction's lines together; a row's in stage order.
    ORDER BY x.xact, x.row_id, array_position(ARRAY['profile', 'email', 'phone'], x.stage), x.kind
    ON CONFLICT (kind, source_seq) DO NOTHING;
    GET DIAGNOSTICS v_logged = ROW_COUNT;

    IF v_horizon > v_since THEN
        UPDATE results_feed_state SET horizon = v_horizon, advanced_at = now() WHERE singleton;
    END IF;
    RETURN v_logged;
END
$$;
-- +goose StatementEnd

ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_job_id_fkey
    FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE NOT VALID;
