-- Stored uploads: a file sent once, estimated and submitted later by its id.
--
-- The original bytes are kept, with how to read them (format, column mapping,
-- encoding, sheet): an estimate or a submit by id runs the very parser an
-- inline upload runs, with the roles chosen then. The counts and the column
-- mapping of the first parse are kept for the upload's view. API replicas
-- share nothing but Postgres, so the bytes live here, bounded by the upload
-- limit and a per-tenant cap (internal/service).

-- +goose Up
CREATE TABLE uploads (
    id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant              text        NOT NULL CHECK (tenant <> ''),
    filename            text        NOT NULL DEFAULT '',
    format              text        NOT NULL CHECK (format IN ('csv', 'tsv', 'xlsx', 'json')),
    read_options        jsonb       NOT NULL DEFAULT '{}', -- columns, encoding, sheet: how the body is read
    body                bytea       NOT NULL,
    size_bytes          bigint      NOT NULL CHECK (size_bytes >= 0),
    rows_uploaded       integer     NOT NULL,                 -- data rows that were not blank
    lookups             integer     NOT NULL,                 -- lookups without job roles
    rows_needing_roles  integer     NOT NULL DEFAULT 0,       -- company-only rows: they look up nothing without roles
    column_map          jsonb       NOT NULL DEFAULT '{}',    -- uploaded header -> the field it was read as
    extra_columns       text[]      NOT NULL DEFAULT '{}',    -- uploaded headers kept as extra columns
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL
);
-- A tenant's live uploads (the cap), and the expired ones (the expirer).
CREATE INDEX uploads_tenant_expires_idx ON uploads (tenant, expires_at);
CREATE INDEX uploads_expires_idx ON uploads (expires_at);

-- +goose Down
DROP TABLE uploads;
