-- Speed (issue 5): the result tables lose their index on job_id.
--
-- Every result and no-match marker paid an entry in it (one index of four on
-- profile_results, email_results and phone_results, of three on no_matches),
-- and no query of enrichq used it: a job's results are read through its rows
-- (job_rows is indexed by job_id, each result table by row_id), the results
-- feed through its log, and a deleted row's results go by row_id. Measured on
-- the ceiling run, in turns with the previous commit: +7.6 % end to end
-- (8,860 -> 9,532 rows/s, three runs each).
--
-- An ETL job that filters a result table by job_id directly now scans it:
-- join job_rows instead (README, "Tables"), or create the index again
-- (CREATE INDEX CONCURRENTLY profile_results_job ON profile_results (job_id))
-- and pay for it on every write.

-- +goose Up
DROP INDEX profile_results_job;
DROP INDEX email_results_job;
DROP INDEX phone_results_job;
DROP INDEX no_matches_job;

-- +goose Down
CREATE INDEX profile_results_job ON profile_results (job_id);
CREATE INDEX email_results_job ON email_results (job_id);
CREATE INDEX phone_results_job ON phone_results (job_id);
CREATE INDEX no_matches_job ON no_matches (job_id);
