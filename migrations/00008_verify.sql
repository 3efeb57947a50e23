-- The verify stage (issue 37): a verifier's verdict on each email a job
-- delivers, and the verdicts kept in the cache (per address, and a catch-all
-- per domain) so that an address is verified once. Additive: a column, a
-- wider CHECK, the feed view's new column at its end.

-- +goose Up

-- The verdict on the email found; NULL when the job did not ask verify.
ALTER TABLE email_results ADD COLUMN email_status text
    CONSTRAINT email_results_status_check CHECK (email_status IN ('valid', 'invalid', 'accept_all', 'webmail', 'disposable', 'unknown'));

-- Verdicts are answers paid for: kept in lookup_cache under stage 'verify'.
ALTER TABLE lookup_cache DROP CONSTRAINT lookup_cache_stage_check;
ALTER TABLE lookup_cache ADD CONSTRAINT lookup_cache_stage_check CHECK (stage IN ('profile', 'email', 'phone', 'verify'));

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
    r.domain AS input_domain,
    l.deleted_seq,
    c.watch_id AS change_watch_id, c.field AS change_field, c.old AS change_old, c.new AS change_new,
    c.kind AS change_kind, c.vendor AS change_vendor, c.at AS change_at,
    e.email_status
FROM results_feed_log l
LEFT JOIN job_rows r ON r.id = l.row_id
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq
LEFT JOIN watch_changes c ON l.kind = 'changed' AND c.id = l.source_seq
WHERE r.id IS NOT NULL OR l.kind = 'deleted';

-- +goose Down
DROP VIEW results_feed;
CREATE VIEW results_feed AS
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
    r.domain AS input_domain,
    l.deleted_seq,
    c.watch_id AS change_watch_id, c.field AS change_field, c.old AS change_old, c.new AS change_new,
    c.kind AS change_kind, c.vendor AS change_vendor, c.at AS change_at
FROM results_feed_log l
LEFT JOIN job_rows r ON r.id = l.row_id
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq
LEFT JOIN watch_changes c ON l.kind = 'changed' AND c.id = l.source_seq
WHERE r.id IS NOT NULL OR l.kind = 'deleted';
DELETE FROM lookup_cache WHERE stage = 'verify';
ALTER TABLE lookup_cache DROP CONSTRAINT lookup_cache_stage_check;
ALTER TABLE lookup_cache ADD CONSTRAINT lookup_cache_stage_check CHECK (stage IN ('profile', 'email', 'phone'));
ALTER TABLE email_results DROP COLUMN email_status;
