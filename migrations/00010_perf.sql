-- Speed (issue 5).
--
-- 1. Row counts by state kept per chunk, so that a status poll reads a few
-- hundred small rows instead of counting every row of a job.
--
-- job_chunk_counts holds, for every chunk of every job, how many of its rows
-- are in each state. Statement-level triggers on job_rows keep it exact in
-- the same transaction as the change (COPY of new rows included), so a poll
-- sees counts consistent with the committed row states. One counts row per
-- chunk, not per job: workers saving different chunks of one job never wait
-- for each other; each trigger locks its chunks' rows in (job_id, chunk)
-- order, so concurrent statements cannot deadlock on them.
--
-- 2. The result tables' foreign keys from job_id to jobs go. They are
-- redundant: job_id is copied from the row (row_id references job_rows, whose
-- job_id references jobs), and deleting a job still cascades to its results
-- through job_rows. They were expensive: each result row inserted took a KEY
-- SHARE lock on its job's one jobs row, which every chunk's credit
-- reservation and settlement update, so with ten chunks saving at once that
-- row's lock became a MultiXact rewritten hundreds of times a chunk (waits on
-- MultiXactMemberSLRU in pg_stat_activity). Measured on the ceiling run
-- (30,000 rows, bulk): SaveOutcomes 131 -> 20 ms a call, ClaimChunk 105 ->
-- 21 ms, end to end 1,980 -> 3,940 rows/s.

-- 3. job_rows_job_state (job_id, state, id) goes: it served the row counts by
-- state, which job_chunk_counts now gives. Without statistics (a young table,
-- or autovacuum off) the planner used it for a chunk's claim ("state =
-- 'pending'" of the job, then the chunk as a filter), walking the entries of
-- every row ever pending in the job, dead ones included: the claim of chunk k
-- cost O(k), 20 ms at the start of a 100,000-row job and 380 ms at its end.
-- The claim now has only job_rows_open_chunk (job_id, chunk) to choose.

-- +goose Up

DROP INDEX job_rows_job_state;

ALTER TABLE profile_results DROP CONSTRAINT profile_results_job_id_fkey;
ALTER TABLE email_results DROP CONSTRAINT email_results_job_id_fkey;
ALTER TABLE phone_results DROP CONSTRAINT phone_results_job_id_fkey;
ALTER TABLE no_matches DROP CONSTRAINT no_matches_job_id_fkey;

CREATE TABLE job_chunk_counts (
    job_id     uuid    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk      integer NOT NULL,
    pending    integer NOT NULL DEFAULT 0,
    in_flight  integer NOT NULL DEFAULT 0,
    retry_wait integer NOT NULL DEFAULT 0,
    matched    integer NOT NULL DEFAULT 0,
    no_match   integer NOT NULL DEFAULT 0,
    failed     integer NOT NULL DEFAULT 0,
    skipped    integer NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, chunk)
);

-- +goose StatementBegin
-- job_rows_count_delta adds the rows of new_rows and subtracts those of
-- old_rows (either may be empty) by chunk; chunks whose counts do not change
-- (an update that keeps the state, such as a lease heartbeat) are left alone.
CREATE FUNCTION job_rows_count_delta() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_chunk_counts AS c (job_id, chunk, pending, in_flight, retry_wait, matched, no_match, failed, skipped)
        SELECT job_id, chunk,
            count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'in_flight'),
            count(*) FILTER (WHERE state = 'retry_wait'), count(*) FILTER (WHERE state = 'matched'),
            count(*) FILTER (WHERE state = 'no_match'), count(*) FILTER (WHERE state = 'failed'),
            count(*) FILTER (WHERE state = 'skipped')
        FROM new_rows GROUP BY job_id, chunk ORDER BY job_id, chunk
        ON CONFLICT (job_id, chunk) DO UPDATE SET
            pending = c.pending + excluded.pending, in_flight = c.in_flight + excluded.in_flight,
            retry_wait = c.retry_wait + excluded.retry_wait, matched = c.matched + excluded.matched,
            no_match = c.no_match + excluded.no_match, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO job_chunk_counts AS c (job_id, chunk, pending, in_flight, retry_wait, matched, no_match, failed, skipped)
        SELECT job_id, chunk, d.pending, d.in_flight, d.retry_wait, d.matched, d.no_match, d.failed, d.skipped
        FROM (
            SELECT job_id, chunk,
                coalesce(sum(n) FILTER (WHERE state = 'pending'), 0) AS pending,
                coalesce(sum(n) FILTER (WHERE state = 'in_flight'), 0) AS in_flight,
                coalesce(sum(n) FILTER (WHERE state = 'retry_wait'), 0) AS retry_wait,
                coalesce(sum(n) FILTER (WHERE state = 'matched'), 0) AS matched,
                coalesce(sum(n) FILTER (WHERE state = 'no_match'), 0) AS no_match,
                coalesce(sum(n) FILTER (WHERE state = 'failed'), 0) AS failed,
                coalesce(sum(n) FILTER (WHERE state = 'skipped'), 0) AS skipped
            FROM (SELECT job_id, chunk, state, 1 AS n FROM new_rows
                  UNION ALL
                  SELECT job_id, chunk, state, -1 FROM old_rows) x
            GROUP BY job_id, chunk
        ) d
        WHERE d.pending <> 0 OR d.in_flight <> 0 OR d.retry_wait <> 0 OR d.matched <> 0 OR d.no_match <> 0 OR d.failed <> 0 OR d.skipped <> 0
        ORDER BY job_id, chunk
        ON CONFLICT (job_id, chunk) DO UPDATE SET
            pending = c.pending + excluded.pending, in_flight = c.in_flight + excluded.in_flight,
            retry_wait = c.retry_wait + excluded.retry_wait, matched = c.matched + excluded.matched,
            no_match = c.no_match + excluded.no_match, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped;
    ELSE -- DELETE: subtract from chunks that still exist (a job's cascade deletes them too)
        UPDATE job_chunk_counts c SET
            pending = c.pending - d.pending, in_flight = c.in_flight - d.in_flight, retry_wait = c.retry_wait - d.retry_wait,
            matched = c.matched - d.matched, no_match = c.no_match - d.no_match, failed = c.failed - d.failed, skipped = c.skipped - d.skipped
        FROM (
            SELECT job_id, chunk,
                count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'in_flight') AS in_flight,
                count(*) FILTER (WHERE state = 'retry_wait') AS retry_wait, count(*) FILTER (WHERE state = 'matched') AS matched,
                count(*) FILTER (WHERE state = 'no_match') AS no_match, count(*) FILTER (WHERE state = 'failed') AS failed,
                count(*) FILTER (WHERE state = 'skipped') AS skipped
            FROM old_rows GROUP BY job_id, chunk
        ) d
        WHERE c.job_id = d.job_id AND c.chunk = d.chunk;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- No writer may change rows between the count below and the triggers: this
-- waits for the transactions writing job_rows now and holds new ones until commit.
LOCK TABLE job_rows IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO job_chunk_counts (job_id, chunk, pending, in_flight, retry_wait, matched, no_match, failed, skipped)
SELECT job_id, chunk,
    count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'in_flight'),
    count(*) FILTER (WHERE state = 'retry_wait'), count(*) FILTER (WHERE state = 'matched'),
    count(*) FILTER (WHERE state = 'no_match'), count(*) FILTER (WHERE state = 'failed'),
    count(*) FILTER (WHERE state = 'skipped')
FROM job_rows GROUP BY job_id, chunk;

CREATE TRIGGER job_rows_counts_insert AFTER INSERT ON job_rows
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_rows_count_delta();
CREATE TRIGGER job_rows_counts_update AFTER UPDATE ON job_rows
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_rows_count_delta();
CREATE TRIGGER job_rows_counts_delete AFTER DELETE ON job_rows
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION job_rows_count_delta();

-- +goose Down
CREATE INDEX job_rows_job_state ON job_rows (job_id, state, id);
ALTER TABLE profile_results ADD CONSTRAINT profile_results_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE email_results ADD CONSTRAINT email_results_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE phone_results ADD CONSTRAINT phone_results_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE no_matches ADD CONSTRAINT no_matches_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
DROP TRIGGER job_rows_counts_delete ON job_rows;
DROP TRIGGER job_rows_counts_update ON job_rows;
DROP TRIGGER job_rows_counts_insert ON job_rows;
DROP FUNCTION job_rows_count_delta();
DROP TABLE job_chunk_counts;
