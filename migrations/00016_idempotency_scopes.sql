-- +goose Up
-- Idempotency keys are scoped to the kind of request: a key of POST /v1/jobs
-- (and MCP's submit_job, the web page's submit: the same request) never
-- answers POST /v1/platform/sync, nor the other way round. Beside the key, a
-- digest of the request (its options and rows, or its members) refuses the
-- key sent again with another request; NULL for jobs made before it (their
-- keys replay as before).
ALTER TABLE jobs
    ADD COLUMN idempotency_scope text CONSTRAINT jobs_idempotency_scope_check CHECK (idempotency_scope IN ('jobs', 'platform_sync')),
    ADD COLUMN request_sha256    bytea;
UPDATE jobs SET idempotency_scope = CASE WHEN source_format = 'platform' THEN 'platform_sync' ELSE 'jobs' END
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE jobs ADD CONSTRAINT jobs_idempotency_scoped CHECK ((idempotency_key IS NULL) = (idempotency_scope IS NULL));
DROP INDEX jobs_tenant_idempotency_key;
CREATE UNIQUE INDEX jobs_tenant_idempotency_key ON jobs (tenant, idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- +goose Down
DROP INDEX jobs_tenant_idempotency_key;
ALTER TABLE jobs DROP CONSTRAINT jobs_idempotency_scoped;
-- Keys of one tenant used by both kinds of request: the older keeps its key.
UPDATE jobs j SET idempotency_key = NULL
    WHERE idempotency_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs o WHERE o.tenant = j.tenant
        AND o.idempotency_key = j.idempotency_key AND (o.created_at, o.id) < (j.created_at, j.id));
CREATE UNIQUE INDEX jobs_tenant_idempotency_key ON jobs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
ALTER TABLE jobs DROP COLUMN request_sha256, DROP COLUMN idempotency_scope;
