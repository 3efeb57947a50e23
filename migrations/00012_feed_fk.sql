-- Speed (issue 5): the results feed's foreign key from job_id to jobs goes,
-- for the reason 00010 gave for the result tables' own.
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

-- +goose Up
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_job_id_fkey;

-- +goose Down
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_job_id_fkey
    FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE NOT VALID;
