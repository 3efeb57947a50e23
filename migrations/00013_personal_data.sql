-- The controller's duties: erasure of one person, retention, an audit trail
-- (docs/personal-data.md).
--
-- erasures: one per POST /v1/erasures, with its receipt (counts by table,
-- never the person). suppressions: keyed hashes (HMAC, ENRICHQ_ERASURE_KEY)
-- of the erased person's inputs; a later upload of one of them is skipped
-- until the erasure is lifted. tenants.retention_seconds: how long a tenant's
-- rows, results, markers, cache entries and feed lines are kept; jobs.purged_at:
-- when retention last removed a job's rows (the job, its counts and credits
-- stay). audit_log: append-only, a trigger refuses UPDATE, DELETE and
-- TRUNCATE. results_feed_log gains 'deleted' lines: one per line an erasure
-- withdrew, naming its position (deleted_seq), so that the ETL deletes too.

-- +goose Up
ALTER TABLE tenants
    ADD COLUMN retention_seconds bigint
        CONSTRAINT tenants_retention_seconds_check CHECK (retention_seconds > 0); -- NULL: kept until erased
ALTER TABLE jobs ADD COLUMN purged_at timestamptz; -- retention removed the job's rows then

-- No foreign key to tenants: jobs name their tenant without one either.
CREATE TABLE erasures (
    id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant     text        NOT NULL CHECK (tenant <> ''),
    key_id     text        NOT NULL,              -- the API key that asked
    identity   text        NOT NULL CHECK (identity IN ('email', 'profile_url', 'name_company', 'name_domain')),
    receipt    jsonb       NOT NULL,              -- rows removed or rewritten, by table
    created_at timestamptz NOT NULL DEFAULT now(),
    lifted_at  timestamptz                        -- DELETE /v1/erasures/{id}: its suppression no longer applies
);
CREATE INDEX erasures_tenant ON erasures (tenant, created_at DESC, id);

CREATE TABLE suppressions (
    tenant      text  NOT NULL CHECK (tenant <> ''),
    person_hash bytea NOT NULL,                   -- HMAC-SHA256 of one normalised input of the person
    erasure_id  uuid  NOT NULL REFERENCES erasures (id) ON DELETE CASCADE,
    PRIMARY KEY (tenant, person_hash, erasure_id)
);
CREATE INDEX suppressions_erasure ON suppressions (erasure_id);

CREATE TABLE audit_log (
    seq     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    tenant  text        NOT NULL CHECK (tenant <> ''),
    key_id  text        NOT NULL,                 -- the API key, or "operator" for the api's own commands, "scheduler"
    action  text        NOT NULL CHECK (action IN ('results_download', 'feed_read', 'erasure', 'erasure_lifted',
                            'retention_purge', 'retention_changed', 'key_created', 'key_revoked', 'budget_changed', 'limits_changed')),
    subject text        NOT NULL DEFAULT '',      -- what it was about: a job, an erasure, a key (ids, never a person)
    rows    bigint      NOT NULL DEFAULT 0        -- how many rows it read, removed or changed
);
CREATE INDEX audit_log_tenant ON audit_log (tenant, seq);

-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'EQ005';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- Deleted lines: written by an erasure in its transaction, under the feed's turn.
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_kind_check;
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_kind_check
    CHECK (kind IN ('profile', 'email', 'phone', 'no_match', 'deleted'));
ALTER TABLE results_feed_log ADD COLUMN deleted_seq bigint; -- kind deleted: the position of the line withdrawn
-- Retention's way to a tenant's old lines.
CREATE INDEX results_feed_log_tenant_logged ON results_feed_log (tenant, logged_at);

-- results_feed shows deleted lines (their row is gone); other lines of a row
-- deleted since stay hidden, as before.
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
    l.deleted_seq
FROM results_feed_log l
LEFT JOIN job_rows r ON r.id = l.row_id
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq
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
    r.domain AS input_domain
FROM results_feed_log l
JOIN job_rows r ON r.id = l.row_id
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq;
DROP INDEX results_feed_log_tenant_logged;
DELETE FROM results_feed_log WHERE kind = 'deleted';
ALTER TABLE results_feed_log DROP COLUMN deleted_seq;
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_kind_check;
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_kind_check
    CHECK (kind IN ('profile', 'email', 'phone', 'no_match'));
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
DROP TABLE suppressions;
DROP TABLE erasures;
ALTER TABLE jobs DROP COLUMN purged_at;
ALTER TABLE tenants DROP COLUMN retention_seconds;
