-- API keys stored in Postgres: only a SHA-256 of each key is kept; the key
-- is shown once, when it is created. ENRICHQ_API_KEYS stays as a bootstrap.

-- +goose Up
CREATE TABLE api_keys (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant       text        NOT NULL,
    name         text        NOT NULL DEFAULT '',
    prefix       text        NOT NULL,        -- the key's first characters, to recognise it in lists
    key_sha256   bytea       NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant);

-- +goose Down
DROP TABLE api_keys;
