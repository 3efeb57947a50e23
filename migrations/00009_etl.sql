-- The ETL surface: one incremental feed of every result (profile, email, phone) and no-match
-- marker, read with "WHERE seq > $last ORDER BY seq" without ever skipping or repeating a line.
--
-- Why not the result tables' own seq: an identity value is handed out at insert, but
-- transactions commit in any order. A reader that saw seq 11 (committed) moves past seq 10,
-- whose transaction commits a moment later: seq 10 is never read.
--
-- So the feed's position is handed out later, by results_feed_advance(), one call at a time
-- (a row lock on results_feed_state), to rows already committed, and each call commits before
-- the next one can hand out more. A reader therefore sees positions in the order they were
-- handed out, and a position it has passed can never appear behind it.
--
-- To find the committed rows not yet in the feed cheaply, every result row carries the id of
-- the transaction that wrote it (xact). A transaction older than pg_snapshot_xmin of a
-- snapshot has ended: its committed rows are all visible, so after an advance every committed
-- row of a transaction older than its horizon is in the feed. The next advance only looks at
-- rows with xact >= that horizon, skipping those it already logged.

-- +goose Up

-- No writer may insert while the columns are added and what exists is logged: this waits for
-- the transactions writing results now, and makes every existing row a committed one.
LOCK TABLE profile_results, email_results, phone_results, no_matches IN ACCESS EXCLUSIVE MODE;

-- xact: the writing transaction, for every row written from now on. Rows written before this
-- migration keep NULL; they are logged below. (A column without a default is added without
-- rewriting the table; the default then applies to new rows only.)
ALTER TABLE profile_results ADD COLUMN xact xid8;
ALTER TABLE profile_results ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
CREATE INDEX profile_results_xact ON profile_results (xact);
ALTER TABLE email_results ADD COLUMN xact xid8;
ALTER TABLE email_results ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
CREATE INDEX email_results_xact ON email_results (xact);
ALTER TABLE phone_results ADD COLUMN xact xid8;
ALTER TABLE phone_results ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
CREATE INDEX phone_results_xact ON phone_results (xact);
ALTER TABLE no_matches ADD COLUMN xact xid8;
ALTER TABLE no_matches ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
CREATE INDEX no_matches_xact ON no_matches (xact);

-- The feed's positions: one line per result row or no-match marker. Written only by
-- results_feed_advance().
CREATE TABLE results_feed_log (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- the feed position
    tenant     text        NOT NULL,
    job_id     uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    row_id     bigint      NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('profile', 'email', 'phone', 'no_match')),
    stage      text        NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    source_seq bigint      NOT NULL, -- seq in profile_results, email_results, phone_results or no_matches
    logged_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (kind, source_seq)
);
CREATE INDEX results_feed_log_tenant ON results_feed_log (tenant, seq);
CREATE INDEX results_feed_log_job ON results_feed_log (job_id);

-- One row: where the next advance starts looking, and the lock that makes advances take turns.
CREATE TABLE results_feed_state (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    horizon     xid8        NOT NULL, -- every committed row of a transaction older than this is logged
    advanced_at timestamptz NOT NULL DEFAULT now()
);

-- What exists now, in the order it was written.
INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq)
SELECT j.tenant, x.job_id, x.row_id, x.kind, x.stage, x.seq
FROM (
    SELECT job_id, row_id, 'profile' AS kind, 'profile' AS stage, seq, created_at FROM profile_results
    UNION ALL
    SELECT job_id, row_id, 'email', 'email', seq, created_at FROM email_results
    UNION ALL
    SELECT job_id, row_id, 'phone', 'phone', seq, created_at FROM phone_results
    UNION ALL
    SELECT job_id, row_id, 'no_match', stage, seq, created_at FROM no_matches
) x
JOIN jobs j ON j.id = x.job_id
ORDER BY x.created_at, x.row_id, array_position(ARRAY['profile', 'email', 'phone'], x.stage), x.kind;

-- Rows written from now on come from transactions running now or later: none older than this.
INSERT INTO results_feed_state (horizon) VALUES (pg_snapshot_xmin(pg_current_snapshot()));

-- results_feed_advance logs the committed results not in the feed yet and returns how many.
-- Cheap (index ranges from the horizon on); safe to call from any number of sessions at once
-- (they take turns); call it in its own transaction (autocommit), never inside a long one:
-- the turn is held until commit.
-- +goose StatementBegin
CREATE FUNCTION results_feed_advance() RETURNS bigint
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

-- results_feed: the feed with each line's input row and what was found. Read it with
--   SELECT results_feed_advance();
--   SELECT * FROM results_feed WHERE seq > $last ORDER BY seq LIMIT 10000;
-- kind says which payload columns are set: profile (name ... technographics), email (email,
-- confidence, verified), phone (phones, primary_number, primary_type), no_match (none; stage
-- names the lookup that found nothing).
CREATE VIEW results_feed AS
SELECT
    l.seq, l.tenant, l.job_id, l.row_id, l.kind, l.stage, l.source_seq, l.logged_at,
    r.input_row, r.ref, r.input_kind,
    r.profile_url AS input_profile_url, r.name AS input_name, r.company AS input_company,
    r.email AS input_email, r.role AS input_role, r.extra,
    coalesce(p.source, e.source, ph.source, n.source) AS source,
    coalesce(p.from_cache, e.from_cache, ph.from_cache, n.from_cache) AS from_cache,
    coalesce(p.fetched_at, e.fetched_at, ph.fetched_at, n.checked_at) AS fetched_at,
    coalesce(p.profile_url, e.profile_url, ph.profile_url) AS profile_url,
    p.name, p.headline, p.company, p.role, p.location, p.company_size, p.industry, p.technographics,
    e.email, e.confidence, e.verified,
    ph.phones, ph.primary_number, ph.primary_type,
    coalesce(p.raw, e.raw, ph.raw) AS raw
FROM results_feed_log l
JOIN job_rows r ON r.id = l.row_id
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq;

-- +goose Down
DROP VIEW results_feed;
DROP FUNCTION results_feed_advance();
DROP TABLE results_feed_state;
DROP TABLE results_feed_log;
DROP INDEX no_matches_xact;
ALTER TABLE no_matches DROP COLUMN xact;
DROP INDEX phone_results_xact;
ALTER TABLE phone_results DROP COLUMN xact;
DROP INDEX email_results_xact;
ALTER TABLE email_results DROP COLUMN xact;
DROP INDEX profile_results_xact;
ALTER TABLE profile_results DROP COLUMN xact;
