-- Speed (issue 5): the foreign keys that every row and every result paid for
-- on its way in go; deleting a job or a row still takes what hangs on it.
--
-- job_rows.job_id -> jobs, and row_id -> job_rows of profile_results,
-- email_results, phone_results and no_matches, were checked for each row
-- inserted: a query and a KEY SHARE lock on the referenced row, per row.
-- Measured: 40 % of the insert of 100,000 rows into job_rows (1.03 s ->
-- 0.61 s; a 1,000,000-row upload pays it ten times over), and about 12 % of
-- a chunk's save (claim and save of 100 rows, one at a time: 9.6 -> 8.4 ms).
--
-- They guarded nothing the one writer does not: a job's rows are inserted
-- by the transaction that inserts the job, and a chunk's results by the
-- statement that moves their rows (store.SaveOutcomes joins every result
-- to the row it updated; a row that is not there gets no result). What they
-- also did, cascading a delete, is kept by two statement-level triggers, one
-- delete per table per statement: deleting jobs deletes their rows (and the
-- remaining foreign keys to jobs still cascade to chunks, counts and
-- webhooks), deleting rows deletes their results and no-match markers.

-- +goose Up
ALTER TABLE job_rows DROP CONSTRAINT job_rows_job_id_fkey;
ALTER TABLE profile_results DROP CONSTRAINT profile_results_row_id_fkey;
ALTER TABLE email_results DROP CONSTRAINT email_results_row_id_fkey;
ALTER TABLE phone_results DROP CONSTRAINT phone_results_row_id_fkey;
ALTER TABLE no_matches DROP CONSTRAINT no_matches_row_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION enrichq_delete_job_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_rows r USING old_jobs j WHERE r.job_id = j.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION enrichq_delete_row_results() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM profile_results x USING old_rows r WHERE x.row_id = r.id;
    DELETE FROM email_results x USING old_rows r WHERE x.row_id = r.id;
    DELETE FROM phone_results x USING old_rows r WHERE x.row_id = r.id;
    DELETE FROM no_matches x USING old_rows r WHERE x.row_id = r.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER jobs_delete_rows AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION enrichq_delete_job_rows();
CREATE TRIGGER job_rows_delete_results AFTER DELETE ON job_rows
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION enrichq_delete_row_results();

-- +goose Down
DROP TRIGGER job_rows_delete_results ON job_rows;
DROP TRIGGER jobs_delete_rows ON jobs;
DROP FUNCTION enrichq_delete_row_results();
DROP FUNCTION enrichq_delete_job_rows();
-- NOT VALID: rows written while the keys were gone are not checked again.
ALTER TABLE no_matches ADD CONSTRAINT no_matches_row_id_fkey
    FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE phone_results ADD CONSTRAINT phone_results_row_id_fkey
    FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE email_results ADD CONSTRAINT email_results_row_id_fkey
    FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE profile_results ADD CONSTRAINT profile_results_row_id_fkey
    FOREIGN KEY (row_id) REFERENCES job_rows (id) ON DELETE CASCADE NOT VALID;
ALTER TABLE job_rows ADD CONSTRAINT job_rows_job_id_fkey
    FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE NOT VALID;
