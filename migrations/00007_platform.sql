-- The platform's own API: members who connected their account (OAuth 2.0,
-- authorization code with PKCE), their tokens encrypted at rest, the pending
-- connect requests, and member sync jobs, whose rows are connected members.
--
-- A member sync job is a row of jobs with one job_rows row per member
-- (input_kind 'member', platform_member set); its profiles go to
-- profile_results with source = 'platform'. Its chunks are dispatched from
-- platform_sync_chunks (task platform:sync), never from job_chunks, so the
-- vendor pipeline never sees its rows.

-- +goose Up

-- A member who connected their platform account to a tenant.
CREATE TABLE platform_members (
    id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant             text        NOT NULL,
    member_id          text        NOT NULL,             -- the platform's id of the member ("id", else OpenID "sub")
    name               text        NOT NULL DEFAULT '',
    email              text        NOT NULL DEFAULT '',
    headline           text        NOT NULL DEFAULT '',
    status             text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'needs_reauth')),
    status_reason      text        NOT NULL DEFAULT '',  -- why needs_reauth
    token              bytea       NOT NULL,             -- AES-256-GCM of the OAuth token (access and refresh); never plaintext
    token_issued_at    timestamptz NOT NULL,
    token_expires_at   timestamptz,                      -- NULL: the platform gave no lifetime
    refreshable        boolean     NOT NULL DEFAULT false, -- a refresh token is held
    refresh_expires_at timestamptz,                      -- NULL: no refresh token, or its life was not given
    scopes             text[]      NOT NULL DEFAULT '{}',  -- granted
    profile            jsonb,                            -- the last /rest/me answer
    connected_at       timestamptz NOT NULL,
    refreshed_at       timestamptz,
    last_synced_at     timestamptz,
    expiry_warned_at   timestamptz,                      -- the scheduler's last warning that the connection ends soon
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, member_id)
);
CREATE INDEX platform_members_tenant ON platform_members (tenant, connected_at, id);
CREATE INDEX platform_members_expiry ON platform_members (token_expires_at) WHERE status = 'active';

-- A connect request on its way through the consent screen: the state sent
-- (by its SHA-256, never the state itself), the tenant it is for, and the
-- PKCE verifier (encrypted). Single use; refused after expires_at.
CREATE TABLE platform_connect_states (
    state_hash bytea       PRIMARY KEY,
    tenant     text        NOT NULL,
    verifier   bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX platform_connect_states_expiry ON platform_connect_states (expires_at);

-- Rows of member sync jobs: one per member.
ALTER TABLE job_rows DROP CONSTRAINT job_rows_input_kind_check;
ALTER TABLE job_rows ADD CONSTRAINT job_rows_input_kind_check
    CHECK (input_kind IN ('profile_url', 'email', 'name_company', 'member')) NOT VALID;
ALTER TABLE job_rows VALIDATE CONSTRAINT job_rows_input_kind_check;
ALTER TABLE job_rows ADD COLUMN platform_member uuid;
ALTER TABLE job_rows ADD CONSTRAINT job_rows_platform_member_fkey
    FOREIGN KEY (platform_member) REFERENCES platform_members (id) NOT VALID;
CREATE INDEX job_rows_platform_member ON job_rows (platform_member) WHERE platform_member IS NOT NULL;

-- Dispatch bookkeeping of member sync jobs (job_chunks' twin for platform:sync tasks).
CREATE TABLE platform_sync_chunks (
    job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk       integer     NOT NULL,
    enqueued_at timestamptz,
    PRIMARY KEY (job_id, chunk)
);

-- +goose Down
DELETE FROM jobs WHERE id IN (SELECT job_id FROM platform_sync_chunks);
DROP TABLE platform_sync_chunks;
DROP INDEX job_rows_platform_member;
ALTER TABLE job_rows DROP CONSTRAINT job_rows_platform_member_fkey;
ALTER TABLE job_rows DROP COLUMN platform_member;
ALTER TABLE job_rows DROP CONSTRAINT job_rows_input_kind_check;
ALTER TABLE job_rows ADD CONSTRAINT job_rows_input_kind_check CHECK (input_kind IN ('profile_url', 'email', 'name_company'));
DROP TABLE platform_connect_states;
DROP TABLE platform_members;
