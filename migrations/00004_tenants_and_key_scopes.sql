-- Tenants and the scopes of API keys.
--
-- A tenant is never empty: the tenants table says so, API keys name a tenant
-- of it, and every table with a tenant column checks it, so that no query can
-- match "every tenant" by an empty one. A key's scopes say what it may do
-- (read, submit, admin; docs/api.md, "Scopes"); keys stored before this
-- migration keep what they could do: read and submit.

-- +goose Up
-- Later settings of a tenant (default budget, allowance, webhook secret,
-- retention) are columns of this table.
CREATE TABLE tenants (
    id         text        PRIMARY KEY CHECK (id <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenants (id) SELECT DISTINCT tenant FROM api_keys;

ALTER TABLE api_keys
    ADD COLUMN scopes text[] NOT NULL DEFAULT '{read,submit}'
        CONSTRAINT api_keys_scopes_check CHECK (cardinality(scopes) > 0 AND scopes <@ '{read,submit,admin}'),
    ADD CONSTRAINT api_keys_tenant_fkey FOREIGN KEY (tenant) REFERENCES tenants (id),
    ADD CONSTRAINT api_keys_tenant_check CHECK (tenant <> '');
ALTER TABLE jobs ADD CONSTRAINT jobs_tenant_check CHECK (tenant <> '');
ALTER TABLE lookup_cache ADD CONSTRAINT lookup_cache_tenant_check CHECK (tenant <> '');
ALTER TABLE lookup_claims ADD CONSTRAINT lookup_claims_tenant_check CHECK (tenant <> '');
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_tenant_check CHECK (tenant <> '');
ALTER TABLE platform_members ADD CONSTRAINT platform_members_tenant_check CHECK (tenant <> '');
ALTER TABLE platform_connect_states ADD CONSTRAINT platform_connect_states_tenant_check CHECK (tenant <> '');

-- +goose Down
ALTER TABLE platform_connect_states DROP CONSTRAINT platform_connect_states_tenant_check;
ALTER TABLE platform_members DROP CONSTRAINT platform_members_tenant_check;
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_tenant_check;
ALTER TABLE lookup_claims DROP CONSTRAINT lookup_claims_tenant_check;
ALTER TABLE lookup_cache DROP CONSTRAINT lookup_cache_tenant_check;
ALTER TABLE jobs DROP CONSTRAINT jobs_tenant_check;
ALTER TABLE api_keys
    DROP CONSTRAINT api_keys_tenant_check,
    DROP CONSTRAINT api_keys_tenant_fkey,
    DROP COLUMN scopes;
DROP TABLE tenants;
