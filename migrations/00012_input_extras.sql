-- An input row's extra columns, stored once: a company row expanded to 50
-- roles made 50 job_rows, each with its own copy of the row's extras (up to
-- 256 columns of 4 KiB). job_rows keep their input_row; results and the feed
-- join the extras by it.

-- +goose Up
CREATE TABLE job_input_extras (
    job_id    uuid    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    input_row integer NOT NULL,  -- 1-based row number in the upload (job_rows.input_row)
    extra     jsonb   NOT NULL,  -- the row's other uploaded columns, echoed in results
    PRIMARY KEY (job_id, input_row)
);

INSERT INTO job_input_extras (job_id, input_row, extra)
SELECT DISTINCT ON (job_id, input_row) job_id, input_row, extra
FROM job_rows WHERE extra IS NOT NULL
ORDER BY job_id, input_row, id;

-- The view keeps its columns; extra now comes from job_input_extras.
CREATE OR REPLACE VIEW results_feed AS
SELECT
    l.seq, l.tenant, l.job_id, l.row_id, l.kind, l.stage, l.source_seq, l.logged_at,
    r.input_row, r.ref, r.input_kind,
    r.profile_url AS input_profile_url, r.name AS input_name, r.company AS input_company,
    r.email AS input_email, r.role AS input_role, x.extra,
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
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq;

ALTER TABLE job_rows DROP COLUMN extra;

-- +goose Down
ALTER TABLE job_rows ADD COLUMN extra jsonb;
UPDATE job_rows r SET extra = x.extra FROM job_input_extras x WHERE x.job_id = r.job_id AND x.input_row = r.input_row;

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

DROP TABLE job_input_extras;
