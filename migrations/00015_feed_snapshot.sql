-- Speed (issue 5): the results feed's advance no longer looks each candidate
-- up in the log, and the log loses the index that lookup needed.
--
-- An advance logs the result rows that committed since the last one. It
-- found them as the rows of transactions from the last horizon on (xact >=
-- horizon) that were not in the log yet: an index probe per candidate on
-- (kind, source_seq), and an entry in that unique index per line logged.
--
-- Now an advance also keeps the snapshot its insert read with (seen). Every
-- row visible in it is logged: those of transactions older than its horizon
-- (they had ended), and the others it logged itself. So a candidate is new
-- exactly when its transaction was not visible in the last advance's
-- snapshot: NOT pg_visible_in_snapshot(xact, seen), a test on the row itself.
-- Visibility only grows (a transaction that committed stays committed), and
-- the next advance's snapshot is taken after the last one committed (the
-- turn is the row lock on the cursor's row, then a new statement).
--
-- The snapshot is the insert statement's own (pg_current_snapshot() in the
-- same statement), so what it read and what it records agree. The unique key
-- (kind, source_seq) goes: one index less per line.
--
-- The turn and the cursor move to a new table, results_feed_cursor, and
-- results_feed_state is dropped. An advance that started before this
-- migration and waits for its lock would otherwise go on, once it commits,
-- with the previous function's body: it would log lines without recording
-- its snapshot, and the next advance would log them again. With its table
-- gone it fails instead (relation "results_feed_state" does not exist) and
-- logs nothing; the next call runs the new body. (The Down does the same the
-- other way.)

-- +goose Up
-- No advance may run while the log is brought up to date and the first snapshot is taken
-- (an advance takes ROW SHARE on the table); those waiting fail once it is dropped.
LOCK TABLE results_feed_state IN EXCLUSIVE MODE;

-- The turn (a row lock on the one row), and where the next advance starts looking.
CREATE TABLE results_feed_cursor (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    horizon     xid8        NOT NULL, -- every committed row of a transaction older than this is logged
    seen        pg_snapshot NOT NULL, -- the last advance's snapshot: every row visible in it is logged
    advanced_at timestamptz NOT NULL DEFAULT now()
);

-- One last advance the old way, in one statement with the snapshot it read with.
WITH snap AS MATERIALIZED (
    SELECT pg_current_snapshot() AS s
), logged AS (
    INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq)
    SELECT j.tenant, x.job_id, x.row_id, x.kind, x.stage, x.seq
    FROM (
        SELECT job_id, row_id, 'profile' AS kind, 'profile' AS stage, seq, xact FROM profile_results WHERE xact >= (SELECT horizon FROM results_feed_state)
        UNION ALL
        SELECT job_id, row_id, 'email', 'email', seq, xact FROM email_results WHERE xact >= (SELECT horizon FROM results_feed_state)
        UNION ALL
        SELECT job_id, row_id, 'phone', 'phone', seq, xact FROM phone_results WHERE xact >= (SELECT horizon FROM results_feed_state)
        UNION ALL
        SELECT job_id, row_id, 'no_match', stage, seq, xact FROM no_matches WHERE xact >= (SELECT horizon FROM results_feed_state)
    ) x
    JOIN jobs j ON j.id = x.job_id
    WHERE NOT EXISTS (SELECT 1 FROM results_feed_log l WHERE l.kind = x.kind AND l.source_seq = x.seq)
    ORDER BY x.xact, x.row_id, array_position(ARRAY['profile', 'email', 'phone'], x.stage), x.kind
)
INSERT INTO results_feed_cursor (horizon, seen)
SELECT greatest(f.horizon, pg_snapshot_xmin(snap.s)), snap.s FROM results_feed_state f, snap;

DROP TABLE results_feed_state;
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_kind_source_seq_key;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION results_feed_advance() RETURNS bigint
LANGUAGE plpgsql
-- The sort of a big advance (180,000 lines for a 100,000-row job) in memory, not on disk.
SET work_mem = '64MB'
AS $$
DECLARE
    v_since xid8;
    v_seen  pg_snapshot;
    v_logged bigint;
BEGIN
    -- The statements below must each take a new snapshot, the insert's after the turn was
    -- taken: READ COMMITTED (autocommit, as documented).
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'results_feed_advance() runs at READ COMMITTED only (call it in autocommit), not in a % transaction',
            upper(current_setting('transaction_isolation')) USING ERRCODE = '25001';
    END IF;
    -- Take the turn. Positions handed out below commit before the next advance gets it.
    SELECT c.horizon, c.seen INTO v_since, v_seen FROM results_feed_cursor c WHERE c.singleton FOR UPDATE;

    -- One statement, one snapshot: the rows it reads and the snapshot it records.
    WITH snap AS MATERIALIZED (
        SELECT pg_current_snapshot() AS s
    ), logged AS (
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
        -- Logged already: everything visible in the last advance's snapshot.
        WHERE NOT pg_visible_in_snapshot(x.xact, v_seen)
        -- A transaction's lines together; a row's in stage order.
        ORDER BY x.xact, x.row_id, array_position(ARRAY['profile', 'email', 'phone'], x.stage), x.kind
        RETURNING 1
    ), moved AS (
        UPDATE results_feed_cursor SET seen = snap.s, horizon = greatest(horizon, pg_snapshot_xmin(snap.s)), advanced_at = now()
        FROM snap WHERE singleton
        RETURNING 1
    )
    SELECT count(*) INTO v_logged FROM logged;
    RETURN v_logged;
END
$$;
-- +goose StatementEnd

-- +goose Down
LOCK TABLE results_feed_cursor IN EXCLUSIVE MODE;
CREATE TABLE results_feed_state (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    horizon     xid8        NOT NULL,
    advanced_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO results_feed_state (horizon, advanced_at) SELECT horizon, advanced_at FROM results_feed_cursor;
DROP TABLE results_feed_cursor;
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_kind_source_seq_key UNIQUE (kind, source_seq);

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
