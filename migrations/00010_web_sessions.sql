-- Web sessions: the web page (internal/web) signs a person in with an API key
-- and keeps a server-side session, so the key never leaves the sign-in form.
--
-- The cookie holds a random token; only its SHA-256 is kept here, so a read
-- of this table signs nobody in. A session carries the key's tenant, id and
-- scopes as they were at sign-in, the CSRF token of its forms, an absolute
-- end and an idle end (each use moves the idle end on).

-- +goose Up
CREATE TABLE web_sessions (
    token_sha256  bytea       PRIMARY KEY CHECK (length(token_sha256) = 32),
    tenant        text        NOT NULL CHECK (tenant <> ''),
    key_id        text        NOT NULL,
    scopes        text[]      NOT NULL,
    csrf_token    text        NOT NULL CHECK (csrf_token <> ''),
    created_at    timestamptz NOT NULL,
    idle_until    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);
-- The sweep of ended sessions.
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);

-- +goose Down
DROP TABLE web_sessions;
