-- Erasure and the leader's sweeps reach what they touch through an index
-- that starts at it, so their cost follows the person's rows (an erasure)
-- or what is due (a sweep), not what the tenant or the deployment holds
-- (issue 41; docs/operations.md, "Costs that follow what they touch").
--
-- Built CONCURRENTLY, outside a transaction: on a large database each index
-- takes minutes, and the workers keep writing meanwhile. A build that fails
-- leaves an INVALID index behind: drop it (DROP INDEX CONCURRENTLY name) and
-- start again.

-- +goose NO TRANSACTION
-- +goose Up

-- An erasure finds the person's rows by what names them: the row's own input
-- (one partial index per kind, so a row adds one entry), what a vendor found
-- for it (its profile and email), and the row's input row for its extras.
-- No index on job_rows.found_profile_url: it changes at the save, and an
-- indexed column that changes stops the save being a HOT update. It is the
-- row's input URL or its profile result's URL, both indexed here.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_rows_profile_url ON job_rows (profile_url) WHERE profile_url IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_rows_email ON job_rows (email) WHERE email IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_rows_name_company ON job_rows (
    lower(regexp_replace(btrim(coalesce(name, '')), '\s+', ' ', 'g')),
    lower(regexp_replace(btrim(coalesce(company, '')), '\s+', ' ', 'g')))
    WHERE name IS NOT NULL AND company IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_rows_name_domain ON job_rows (
    lower(regexp_replace(btrim(coalesce(name, '')), '\s+', ' ', 'g')), domain)
    WHERE name IS NOT NULL AND domain IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_rows_input_row ON job_rows (job_id, input_row);
CREATE INDEX CONCURRENTLY IF NOT EXISTS profile_results_profile_url ON profile_results (profile_url);
CREATE INDEX CONCURRENTLY IF NOT EXISTS profile_results_name_company ON profile_results (
    lower(regexp_replace(btrim(coalesce(name, '')), '\s+', ' ', 'g')),
    lower(regexp_replace(btrim(coalesce(company, '')), '\s+', ' ', 'g')))
    WHERE name IS NOT NULL AND company IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS email_results_email ON email_results (lower(email));
-- The ledger lines of a row (single calls), and a job's bulk lines: each
-- line is in exactly one of the two.
CREATE INDEX CONCURRENTLY IF NOT EXISTS credit_ledger_row ON credit_ledger (row_id) WHERE row_id IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS credit_ledger_job_bulk ON credit_ledger (job_id) WHERE row_id IS NULL;
-- Feed lines by their row (an erasure, the purge); replaces the index on
-- job_id alone, which it starts with: no entry more per line.
CREATE INDEX CONCURRENTLY IF NOT EXISTS results_feed_log_job_row ON results_feed_log (job_id, row_id);
DROP INDEX CONCURRENTLY IF EXISTS results_feed_log_job;

-- The sweeps: each tenant's entries in the order they fall due.
CREATE INDEX CONCURRENTLY IF NOT EXISTS lookup_cache_tenant_fetched ON lookup_cache (tenant, fetched_at);
-- Jobs whose rows retention has still to purge, by when they finished.
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_unpurged ON jobs (tenant, finished_at)
    WHERE purged_at IS NULL AND finished_at IS NOT NULL;
-- Jobs not finished, by their last change (retention's cancel of abandoned jobs).
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_unfinished ON jobs (tenant, updated_at) WHERE finished_at IS NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS jobs_unfinished;
DROP INDEX CONCURRENTLY IF EXISTS jobs_unpurged;
DROP INDEX CONCURRENTLY IF EXISTS lookup_cache_tenant_fetched;
CREATE INDEX CONCURRENTLY IF NOT EXISTS results_feed_log_job ON results_feed_log (job_id);
DROP INDEX CONCURRENTLY IF EXISTS results_feed_log_job_row;
DROP INDEX CONCURRENTLY IF EXISTS credit_ledger_job_bulk;
DROP INDEX CONCURRENTLY IF EXISTS credit_ledger_row;
DROP INDEX CONCURRENTLY IF EXISTS email_results_email;
DROP INDEX CONCURRENTLY IF EXISTS profile_results_name_company;
DROP INDEX CONCURRENTLY IF EXISTS profile_results_profile_url;
DROP INDEX CONCURRENTLY IF EXISTS job_rows_input_row;
DROP INDEX CONCURRENTLY IF EXISTS job_rows_name_domain;
DROP INDEX CONCURRENTLY IF EXISTS job_rows_name_company;
DROP INDEX CONCURRENTLY IF EXISTS job_rows_email;
DROP INDEX CONCURRENTLY IF EXISTS job_rows_profile_url;
