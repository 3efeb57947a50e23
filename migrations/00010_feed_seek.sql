-- Two reads that must stay flat as a tenant grows (issues 40 and 41;
-- docs/operations.md, "Costs that follow what they touch").
--
-- The results feed reaches each line's row, extras, result and change by a
-- probe of its own keys, whatever the statistics say. Each join is a LATERAL
-- subquery that LIMIT keeps from being flattened: its only plan is an index
-- probe per line (the row by id, its extras by (job_id, input_row), a result
-- by its seq). Plain joins let the planner, thinking a fresh job had few
-- lines, hash whole result tables, read the job's extras by job_id alone,
-- then sort every line after the position to keep a page of them.
-- The columns are the view's of 00008_verify.sql, in their order.
--
-- An erasure finds the person's platform members and watch inputs through
-- indexes that start at the person's values, as it finds their rows
-- (00005_seek.sql): not by reading every member and watch input of the
-- tenant. Built CONCURRENTLY, outside a transaction; a build that fails
-- leaves an INVALID index: drop it (DROP INDEX CONCURRENTLY name) and start
-- again.

-- +goose NO TRANSACTION
-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS platform_members_email ON platform_members (tenant, lower(email)) WHERE email <> '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS platform_members_profile_url ON platform_members (tenant, (profile->>'profile_url'))
    WHERE profile->>'profile_url' IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS platform_members_url ON platform_members (tenant, (profile->>'url'))
    WHERE profile->>'url' IS NOT NULL;
-- A watch input by what names the person, its own input or its snapshot's answer.
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_inputs_email ON watch_inputs (lower(email)) WHERE email IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_inputs_snap_email ON watch_inputs (lower(snap_email)) WHERE snap_email IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_inputs_profile_url ON watch_inputs (profile_url) WHERE profile_url IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_inputs_found_profile_url ON watch_inputs (found_profile_url) WHERE found_profile_url IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_inputs_name_company ON watch_inputs (
    lower(regexp_replace(btrim(coalesce(name, '')), '\s+', ' ', 'g')),
    lower(regexp_replace(btrim(coalesce(company, '')), '\s+', ' ', 'g')))
    WHERE name IS NOT NULL AND company IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_inputs_name_domain ON watch_inputs (
    lower(regexp_replace(btrim(coalesce(name, '')), '\s+', ' ', 'g')), domain)
    WHERE name IS NOT NULL AND domain IS NOT NULL;
-- A watch input's change lines.
CREATE INDEX CONCURRENTLY IF NOT EXISTS watch_changes_input ON watch_changes (watch_id, n);

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
LEFT JOIN LATERAL (SELECT r.id, r.job_id, r.input_row, r.ref, r.input_kind, r.profile_url, r.name, r.company, r.email, r.role, r.domain
    FROM job_rows r WHERE r.id = l.row_id LIMIT 1) r ON true
LEFT JOIN LATERAL (SELECT x.extra FROM job_input_extras x
    WHERE x.job_id = r.job_id AND x.input_row = r.input_row LIMIT 1) x ON true
LEFT JOIN LATERAL (SELECT p.source, p.from_cache, p.fetched_at, p.profile_url, p.name, p.headline, p.company, p.role,
        p.location, p.company_size, p.industry, p.technographics, p.raw
    FROM profile_results p WHERE l.kind = 'profile' AND p.seq = l.source_seq LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT e.source, e.from_cache, e.fetched_at, e.profile_url, e.email, e.confidence, e.verified, e.raw, e.email_status
    FROM email_results e WHERE l.kind = 'email' AND e.seq = l.source_seq LIMIT 1) e ON true
LEFT JOIN LATERAL (SELECT ph.source, ph.from_cache, ph.fetched_at, ph.profile_url, ph.phones, ph.primary_number, ph.primary_type, ph.raw
    FROM phone_results ph WHERE l.kind = 'phone' AND ph.seq = l.source_seq LIMIT 1) ph ON true
LEFT JOIN LATERAL (SELECT n.source, n.from_cache, n.checked_at
    FROM no_matches n WHERE l.kind = 'no_match' AND n.seq = l.source_seq LIMIT 1) n ON true
LEFT JOIN LATERAL (SELECT c.watch_id, c.field, c.old, c.new, c.kind, c.vendor, c.at
    FROM watch_changes c WHERE l.kind = 'changed' AND c.id = l.source_seq LIMIT 1) c ON true
WHERE r.id IS NOT NULL OR l.kind = 'deleted';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS watch_changes_input;
DROP INDEX CONCURRENTLY IF EXISTS watch_inputs_name_domain;
DROP INDEX CONCURRENTLY IF EXISTS watch_inputs_name_company;
DROP INDEX CONCURRENTLY IF EXISTS watch_inputs_found_profile_url;
DROP INDEX CONCURRENTLY IF EXISTS watch_inputs_profile_url;
DROP INDEX CONCURRENTLY IF EXISTS watch_inputs_snap_email;
DROP INDEX CONCURRENTLY IF EXISTS watch_inputs_email;
DROP INDEX CONCURRENTLY IF EXISTS platform_members_url;
DROP INDEX CONCURRENTLY IF EXISTS platform_members_profile_url;
DROP INDEX CONCURRENTLY IF EXISTS platform_members_email;
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
