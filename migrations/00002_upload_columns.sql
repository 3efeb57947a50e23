-- What an upload held, kept with its job, and lookups by a company's domain.
--
-- jobs: the header -> field mapping the upload was read with, the headers kept
-- as extra columns, its data rows and the distinct lookups they made (shown in
-- the job's status). job_rows: the canonical domain of a name_domain lookup.

-- +goose Up
ALTER TABLE jobs
    ADD COLUMN column_map       jsonb   NOT NULL DEFAULT '{}', -- uploaded header -> the field it was read as
    ADD COLUMN extra_columns    text[]  NOT NULL DEFAULT '{}', -- uploaded headers kept as extra columns, in file order
    ADD COLUMN rows_uploaded    integer,                       -- data rows of the upload; NULL: not recorded (member syncs)
    ADD COLUMN distinct_lookups integer;                       -- distinct inputs among the job's lookups; NULL: not recorded

ALTER TABLE job_rows ADD COLUMN domain text; -- the company's website domain: bare, lower-case ASCII (name_domain rows)

-- NOT VALID: every row stored so far holds one of the old kinds, a subset; it
-- spares a scan of job_rows under a lock at deploy. New rows are checked.
ALTER TABLE job_rows DROP CONSTRAINT job_rows_input_kind_check;
ALTER TABLE job_rows ADD CONSTRAINT job_rows_input_kind_check
    CHECK (input_kind IN ('profile_url', 'email', 'name_company', 'name_domain', 'member')) NOT VALID;

-- results_feed gains the input domain (a view may only grow at its end).
CREATE OR REPLACE VIEW results_feed AS
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
    coalesce(p.raw, e.raw, ph.raw) AS raw,
    r.domain AS input_domain
FROM results_feed_log l
JOIN job_rows r ON r.id = l.row_id
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq;

-- +goose Down
-- A view cannot lose a column in place: it is made again as it was.
DROP VIEW results_feed;
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

ALTER TABLE job_rows DROP CONSTRAINT job_rows_input_kind_check;
ALTER TABLE job_rows ADD CONSTRAINT job_rows_input_kind_check
    CHECK (input_kind IN ('profile_url', 'email', 'name_company', 'member')) NOT VALID;
ALTER TABLE job_rows DROP COLUMN domain;
ALTER TABLE jobs DROP COLUMN column_map, DROP COLUMN extra_columns, DROP COLUMN rows_uploaded, DROP COLUMN distinct_lookups;
