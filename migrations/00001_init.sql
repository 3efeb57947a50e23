-- enrichq schema, version 1.
-- Postgres is the source of truth: everything needed to finish a job is here.
-- Redis only carries "process chunk K of job J" tasks.

-- +goose Up

-- One submitted list.
CREATE TABLE jobs (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant           text        NOT NULL,
    name             text        NOT NULL DEFAULT '',
    state            text        NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'paused', 'completed', 'canceled', 'failed')),
    state_reason     text        NOT NULL DEFAULT '',
    lookups          text[]      NOT NULL,                 -- stages to run, in order: profile, email, phone
    roles            text[]      NOT NULL DEFAULT '{}',    -- role titles company-only rows were expanded with
    budget_credits   bigint      CHECK (budget_credits >= 0), -- NULL: no job budget
    credits_reserved bigint      NOT NULL DEFAULT 0 CHECK (credits_reserved >= 0),
    credits_spent    bigint      NOT NULL DEFAULT 0,
    max_age_seconds  bigint      NOT NULL DEFAULT 2592000 CHECK (max_age_seconds >= 0), -- reuse cached answers newer than this
    total_rows       integer     NOT NULL DEFAULT 0,
    chunk_count      integer     NOT NULL DEFAULT 0,
    source_format    text        NOT NULL DEFAULT 'json',
    idempotency_key  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX jobs_tenant_idempotency_key ON jobs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_tenant_created ON jobs (tenant, created_at DESC, id DESC);
CREATE INDEX jobs_open ON jobs (state) WHERE state IN ('queued', 'running', 'canceled') AND finished_at IS NULL;

-- One lookup to run: an uploaded row, or one (company row x role).
CREATE TABLE job_rows (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk             integer     NOT NULL,            -- the unit of work a task carries
    input_row         integer     NOT NULL,            -- 1-based row number in the upload
    ref               text        NOT NULL DEFAULT '', -- the caller's own id, echoed in results
    input_kind        text        NOT NULL CHECK (input_kind IN ('profile_url', 'email', 'name_company')),
    profile_url       text,
    name              text,
    company           text,
    email             text,
    role              text,                            -- the role this lookup was expanded from
    extra             jsonb,                           -- other uploaded columns, echoed in results
    state             text        NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'in_flight', 'retry_wait', 'matched', 'no_match', 'failed', 'skipped')),
    state_reason      text        NOT NULL DEFAULT '', -- why failed or skipped
    last_error        text        NOT NULL DEFAULT '',
    attempts          integer     NOT NULL DEFAULT 0,  -- failed attempts so far
    next_attempt_at   timestamptz,                     -- retry_wait: due time
    lease_until       timestamptz,                     -- in_flight: claim expiry
    lease_token       uuid,                            -- in_flight: who holds the claim
    found_profile_url text,                            -- profile URL given or found, for the email and phone stages
    stages_done       text[]      NOT NULL DEFAULT '{}', -- stages that have an outcome (result or no-match)
    any_match         boolean     NOT NULL DEFAULT false, -- some stage found something
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz
);
CREATE INDEX job_rows_job_id ON job_rows (job_id, id);
CREATE INDEX job_rows_job_state ON job_rows (job_id, state, id);
CREATE INDEX job_rows_open_chunk ON job_rows (job_id, chunk) WHERE state IN ('pending', 'in_flight', 'retry_wait');
CREATE INDEX job_rows_lease ON job_rows (lease_until) WHERE state = 'in_flight';
CREATE INDEX job_rows_due ON job_rows (next_attempt_at) WHERE state = 'retry_wait';

-- Dispatch bookkeeping: when a chunk was last handed to the queue.
CREATE TABLE job_chunks (
    job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk       integer     NOT NULL,
    enqueued_at timestamptz,
    PRIMARY KEY (job_id, chunk)
);

-- Results, one table per stage. seq grows monotonically for incremental ETL reads.
CREATE TABLE profile_results (
    seq            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id         uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    row_id         bigint      NOT NULL UNIQUE REFERENCES job_rows (id) ON DELETE CASCADE,
    source         text        NOT NULL DEFAULT 'vendor',
    from_cache     boolean     NOT NULL DEFAULT false,
    profile_url    text        NOT NULL,
    name           text,
    headline       text,
    company        text,
    role           text,
    location       text,
    company_size   text,
    industry       text,
    technographics text[],
    raw            jsonb       NOT NULL,
    fetched_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX profile_results_job ON profile_results (job_id);

CREATE TABLE email_results (
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    row_id      bigint      NOT NULL UNIQUE REFERENCES job_rows (id) ON DELETE CASCADE,
    source      text        NOT NULL DEFAULT 'vendor',
    from_cache  boolean     NOT NULL DEFAULT false,
    profile_url text        NOT NULL,
    email       text        NOT NULL,
    confidence  real,
    verified    boolean,
    raw         jsonb       NOT NULL,
    fetched_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX email_results_job ON email_results (job_id);

CREATE TABLE phone_results (
    seq            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id         uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    row_id         bigint      NOT NULL UNIQUE REFERENCES job_rows (id) ON DELETE CASCADE,
    source         text        NOT NULL DEFAULT 'vendor',
    from_cache     boolean     NOT NULL DEFAULT false,
    profile_url    text        NOT NULL,
    phones         jsonb       NOT NULL,  -- [{"number", "type", "country"}]
    primary_number text,
    primary_type   text,
    raw            jsonb       NOT NULL,
    fetched_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX phone_results_job ON phone_results (job_id);

-- A stage that was looked up and found nothing. A result, not an error: never bought again.
CREATE TABLE no_matches (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    row_id     bigint      NOT NULL REFERENCES job_rows (id) ON DELETE CASCADE,
    stage      text        NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    source     text        NOT NULL DEFAULT 'vendor',
    from_cache boolean     NOT NULL DEFAULT false,
    checked_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (row_id, stage)
);
CREATE INDEX no_matches_job ON no_matches (job_id);

-- Answers we already paid for, by tenant, stage and normalised input: hits and no-matches.
CREATE TABLE lookup_cache (
    tenant     text        NOT NULL,
    stage      text        NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    input_key  text        NOT NULL,
    matched    boolean     NOT NULL,
    result     jsonb,                 -- the typed result; NULL for a no-match
    fetched_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, stage, input_key)
);

-- The credit ledger: one row per vendor call that may have cost credits.
-- reserved before the call (worst case), settled after it (what the vendor charged).
CREATE TABLE credit_ledger (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            uuid        NOT NULL REFERENCES jobs (id),
    row_id            bigint,              -- single lookups; NULL for a bulk call
    row_count         integer     NOT NULL DEFAULT 1,
    stage             text        NOT NULL, -- profile, email, phone, or bulk
    endpoint          text        NOT NULL,
    idempotency_key   text        NOT NULL,
    reserved          bigint      NOT NULL CHECK (reserved >= 0),
    charged           bigint,               -- NULL while reserved
    charge_reported   boolean     NOT NULL DEFAULT false, -- true: from X-Credits-Charged; false: our cost table
    credits_remaining bigint,               -- X-Credits-Remaining, when sent
    status            text        NOT NULL DEFAULT 'reserved'
                      CHECK (status IN ('reserved', 'settled', 'released', 'unknown')),
    error             text        NOT NULL DEFAULT '',
    reserved_at       timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL, -- a reservation not settled by then is counted as spent
    settled_at        timestamptz
);
CREATE INDEX credit_ledger_job ON credit_ledger (job_id);
CREATE INDEX credit_ledger_open ON credit_ledger (expires_at) WHERE status = 'reserved';

-- +goose Down
DROP TABLE credit_ledger;
DROP TABLE lookup_cache;
DROP TABLE no_matches;
DROP TABLE phone_results;
DROP TABLE email_results;
DROP TABLE profile_results;
DROP TABLE job_chunks;
DROP TABLE job_rows;
DROP TABLE jobs;
