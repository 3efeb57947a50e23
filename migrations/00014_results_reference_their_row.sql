-- Results and no-match markers reference their row by (job_id, row_id), not
-- the job and the row apart: one check instead of two, and a stronger one
-- (a result's job is its row's job). Deleting a job still deletes them, through
-- its rows, and TRUNCATE jobs CASCADE still reaches them.
-- why: a reference to jobs (id) takes a share lock on the job's row for every
-- result saved; with the saves of ten chunks at once that one row became a
-- multixact, and the ceiling ran at 7,046-8,861 rows/s (ratio 0.38-0.43)
-- against 8,812-9,943 (0.44-0.48) this way, and 9,829-10,774 (0.43-0.44)
-- without foreign keys (docs/benchmarks.md).

-- +goose Up
DROP INDEX job_rows_job_id;
CREATE UNIQUE INDEX job_rows_job_id ON job_rows (job_id, id);

ALTER TABLE profile_results
    DROP CONSTRAINT profile_results_job_id_fkey,
    DROP CONSTRAINT profile_results_row_id_fkey,
    ADD CONSTRAINT profile_results_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE;
ALTER TABLE email_results
    DROP CONSTRAINT email_results_job_id_fkey,
    DROP CONSTRAINT email_results_row_id_fkey,
    ADD CONSTRAINT email_results_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE;
ALTER TABLE phone_results
    DROP CONSTRAINT phone_results_job_id_fkey,
    DROP CONSTRAINT phone_results_row_id_fkey,
    ADD CONSTRAINT phone_results_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE;
ALTER TABLE no_matches
    DROP CONSTRAINT no_matches_job_id_fkey,
    DROP CONSTRAINT no_matches_row_id_fkey,
    ADD CONSTRAINT no_matches_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE;

-- +goose Down
ALTER TABLE no_matches
    DROP CONSTRAINT no_matches_row_fkey,
    ADD CONSTRAINT no_matches_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE,
    ADD CONSTRAINT no_matches_row_id_fkey FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE;
ALTER TABLE phone_results
    DROP CONSTRAINT phone_results_row_fkey,
    ADD CONSTRAINT phone_results_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE,
    ADD CONSTRAINT phone_results_row_id_fkey FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE;
ALTER TABLE email_results
    DROP CONSTRAINT email_results_row_fkey,
    ADD CONSTRAINT email_results_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE,
    ADD CONSTRAINT email_results_row_id_fkey FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE;
ALTER TABLE profile_results
    DROP CONSTRAINT profile_results_row_fkey,
    ADD CONSTRAINT profile_results_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE,
    ADD CONSTRAINT profile_results_row_id_fkey FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE;

DROP INDEX job_rows_job_id;
CREATE INDEX job_rows_job_id ON job_rows (job_id, id);
