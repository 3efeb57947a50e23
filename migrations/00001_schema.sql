-- enrichq's schema, as released in 0.1.0.
--
-- Postgres is the source of truth: everything needed to finish a job is here.
-- Redis only carries "process chunk K of job J" tasks. Sections, in order:
-- jobs and rows; results and markers; money; cache and claims; the feed;
-- tenants; keys; webhooks; the platform; uploads; web sessions; personal data.
-- This file is never edited again: a change is a new file, 00002 on, that
-- alters what is here.
--
-- Foreign keys are kept. Deleting a job deletes what hangs on it (its rows,
-- their extras, results and no-match markers, its chunks, counts, webhook
-- deliveries and member sync chunks), by ON DELETE CASCADE, and TRUNCATE jobs
-- CASCADE empties the same tables; the credit ledger refuses the delete of a
-- job that called the vendor (what was spent stays on record). Their cost on
-- the ceiling benchmark, run with and without them in turns, is measured in
-- docs/benchmarks.md.
--
-- A tenant is never empty: every tenant column checks it, so that no query
-- can match "every tenant" by an empty one.
--
-- A choice made for speed has a "why:" line beside it, with its effect as
-- measured on the benchmark (docs/benchmarks.md).

-- +goose Up

------------------------------------------------------------------------------
-- Jobs and rows
------------------------------------------------------------------------------

-- One submitted list, or one member sync of the platform.
CREATE TABLE jobs (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant           text        NOT NULL CHECK (tenant <> ''),
    name             text        NOT NULL DEFAULT '',
    state            text        NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'paused', 'completed', 'canceled', 'failed')),
    state_reason     text        NOT NULL DEFAULT '',
    -- Why a paused job is paused, and since when: each cause resumes its own
    -- way (docs/money.md, "Paused jobs").
    paused_by        text        CHECK (paused_by IN ('job_budget', 'allowance', 'vendor_access', 'platform')),
    paused_at        timestamptz,
    lookups          text[]      NOT NULL,                 -- stages to run, in order: profile, email, phone
    roles            text[]      NOT NULL DEFAULT '{}',    -- role titles company-only rows were expanded with
    budget_credits   bigint      CHECK (budget_credits >= 0), -- NULL: no job budget
    credits_reserved bigint      NOT NULL DEFAULT 0 CHECK (credits_reserved >= 0),
    credits_spent    bigint      NOT NULL DEFAULT 0,
    max_age_seconds  bigint      NOT NULL DEFAULT 2592000 CHECK (max_age_seconds >= 0), -- reuse cached answers newer than this
    -- What the upload held, shown in the job's status.
    source_format    text        NOT NULL DEFAULT 'json',
    column_map       jsonb       NOT NULL DEFAULT '{}',    -- uploaded header -> the field it was read as
    extra_columns    text[]      NOT NULL DEFAULT '{}',    -- uploaded headers kept as extra columns, in file order
    rows_uploaded    integer,                              -- data rows of the upload; NULL: not recorded (member syncs)
    distinct_lookups integer,                              -- distinct inputs among the job's lookups; NULL: not recorded
    total_rows       integer     NOT NULL DEFAULT 0,
    chunk_count      integer     NOT NULL DEFAULT 0,
    idempotency_key  text,
    callback_url     text,                                 -- completion webhook, see webhook_deliveries
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    purged_at        timestamptz,                          -- retention removed the job's rows then (the job, its counts and credits stay)
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX jobs_tenant_idempotency_key ON jobs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_tenant_created ON jobs (tenant, created_at DESC, id DESC);
CREATE INDEX jobs_open ON jobs (state) WHERE state IN ('queued', 'running', 'canceled') AND finished_at IS NULL;
-- The monthly resume's way to the jobs it wakes.
CREATE INDEX jobs_paused_allowance ON jobs (paused_at) WHERE state = 'paused' AND paused_by = 'allowance';

-- One lookup to run: an uploaded row, one (company row x role), or one member
-- of a member sync (input_kind 'member', platform_member set).
CREATE TABLE job_rows (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk             integer     NOT NULL,            -- the unit of work a task carries
    input_row         integer     NOT NULL,            -- 1-based row number in the upload; its extras are in job_input_extras
    ref               text        NOT NULL DEFAULT '', -- the caller's own id, echoed in results
    input_kind        text        NOT NULL
                      CHECK (input_kind IN ('profile_url', 'email', 'name_company', 'name_domain', 'member')),
    profile_url       text,
    name              text,
    company           text,
    domain            text,                            -- the company's website domain: bare, lower-case ASCII (name_domain rows)
    email             text,
    role              text,                            -- the role this lookup was expanded from
    platform_member   uuid,                            -- member sync rows: the member (foreign key in "The platform")
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
)
-- A row is updated twice (claim, save); room on its page lets both update it in place (HOT).
-- A fresh upload takes about three times the pages; a processed job about what it took anyway.
WITH (fillfactor = 35); -- why: 84 % of row updates HOT (0 with indexes on the state, 53 % at fillfactor 50), a claim 1.5 -> 0.53 ms, write path +14 %
-- A job's rows; unique, for the results' and markers' reference to their row (job_id, row_id), below.
CREATE UNIQUE INDEX job_rows_job_id ON job_rows (job_id, id);
-- No index of job_rows names a column a claim or save changes (state, the lease, next_attempt_at...):
-- claims find a chunk's rows here; expired leases and due retries are found through job_chunk_counts.
CREATE INDEX job_rows_chunk ON job_rows (job_id, chunk); -- why: with the fillfactor, what made 84 % of row updates HOT (write path +14 %)

-- An input row's other uploaded columns, echoed in results, stored once for
-- every lookup the row makes: a company row expanded to 50 roles is 50
-- job_rows, and its extras may be 256 columns of 4 KiB. Results and the feed
-- join them by (job_id, input_row).
CREATE TABLE job_input_extras (
    job_id    uuid    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    input_row integer NOT NULL,  -- 1-based row number in the upload (job_rows.input_row)
    extra     jsonb   NOT NULL,  -- header -> value
    PRIMARY KEY (job_id, input_row)
);

-- Dispatch bookkeeping: when a chunk was last handed to the queue.
CREATE TABLE job_chunks (
    job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk       integer     NOT NULL,
    enqueued_at timestamptz,
    PRIMARY KEY (job_id, chunk)
);
-- A job's next never-dispatched chunk (store.DispatchNext).
CREATE INDEX job_chunks_undispatched ON job_chunks (job_id, chunk) WHERE enqueued_at IS NULL; -- why: without it the next chunk is found by walking the dispatched ones: 40 of 300 profile samples of a ceiling run

-- How many rows of each chunk are in each state, kept exact by the triggers
-- below in the statement that changes the rows (COPY included). Status polls,
-- finish checks, the lease sweep and the cancel read these, not the rows. One
-- row per chunk: workers saving different chunks of a job never wait for each
-- other; the triggers lock chunks in (job_id, chunk) order, so they cannot
-- deadlock.
CREATE TABLE job_chunk_counts (
    job_id     uuid    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk      integer NOT NULL,
    pending    integer NOT NULL DEFAULT 0,
    in_flight  integer NOT NULL DEFAULT 0,
    retry_wait integer NOT NULL DEFAULT 0,
    matched    integer NOT NULL DEFAULT 0,
    no_match   integer NOT NULL DEFAULT 0,
    failed     integer NOT NULL DEFAULT 0,
    skipped    integer NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, chunk)
);
-- The chunks with rows in flight: the lease sweep's way to expired leases (job_rows has no index on the lease).
CREATE INDEX job_chunk_counts_in_flight ON job_chunk_counts (job_id, chunk) WHERE in_flight > 0; -- why: part of keeping the lease out of job_rows' indexes (84 % HOT, write path +14 %)

-- job_rows_count_delta adds the rows of new_rows and subtracts those of
-- old_rows (either may be empty) by chunk; chunks whose counts do not change
-- (an update that keeps the state, such as a lease heartbeat) are left alone.
-- +goose StatementBegin
CREATE FUNCTION job_rows_count_delta() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_chunk_counts AS c (job_id, chunk, pending, in_flight, retry_wait, matched, no_match, failed, skipped)
        SELECT job_id, chunk,
            count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'in_flight'),
            count(*) FILTER (WHERE state = 'retry_wait'), count(*) FILTER (WHERE state = 'matched'),
            count(*) FILTER (WHERE state = 'no_match'), count(*) FILTER (WHERE state = 'failed'),
            count(*) FILTER (WHERE state = 'skipped')
        FROM new_rows GROUP BY job_id, chunk ORDER BY job_id, chunk
        ON CONFLICT (job_id, chunk) DO UPDATE SET
            pending = c.pending + excluded.pending, in_flight = c.in_flight + excluded.in_flight,
            retry_wait = c.retry_wait + excluded.retry_wait, matched = c.matched + excluded.matched,
            no_match = c.no_match + excluded.no_match, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO job_chunk_counts AS c (job_id, chunk, pending, in_flight, retry_wait, matched, no_match, failed, skipped)
        SELECT job_id, chunk, d.pending, d.in_flight, d.retry_wait, d.matched, d.no_match, d.failed, d.skipped
        FROM (
            SELECT job_id, chunk,
                coalesce(sum(n) FILTER (WHERE state = 'pending'), 0) AS pending,
                coalesce(sum(n) FILTER (WHERE state = 'in_flight'), 0) AS in_flight,
                coalesce(sum(n) FILTER (WHERE state = 'retry_wait'), 0) AS retry_wait,
                coalesce(sum(n) FILTER (WHERE state = 'matched'), 0) AS matched,
                coalesce(sum(n) FILTER (WHERE state = 'no_match'), 0) AS no_match,
                coalesce(sum(n) FILTER (WHERE state = 'failed'), 0) AS failed,
                coalesce(sum(n) FILTER (WHERE state = 'skipped'), 0) AS skipped
            FROM (SELECT job_id, chunk, state, 1 AS n FROM new_rows
                  UNION ALL
                  SELECT job_id, chunk, state, -1 FROM old_rows) x
            GROUP BY job_id, chunk
        ) d
        WHERE d.pending <> 0 OR d.in_flight <> 0 OR d.retry_wait <> 0 OR d.matched <> 0 OR d.no_match <> 0 OR d.failed <> 0 OR d.skipped <> 0
        ORDER BY job_id, chunk
        ON CONFLICT (job_id, chunk) DO UPDATE SET
            pending = c.pending + excluded.pending, in_flight = c.in_flight + excluded.in_flight,
            retry_wait = c.retry_wait + excluded.retry_wait, matched = c.matched + excluded.matched,
            no_match = c.no_match + excluded.no_match, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped;
    ELSE -- DELETE: subtract from chunks that still exist (a job's delete cascades to them too)
        UPDATE job_chunk_counts c SET
            pending = c.pending - d.pending, in_flight = c.in_flight - d.in_flight, retry_wait = c.retry_wait - d.retry_wait,
            matched = c.matched - d.matched, no_match = c.no_match - d.no_match, failed = c.failed - d.failed, skipped = c.skipped - d.skipped
        FROM (
            SELECT job_id, chunk,
                count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'in_flight') AS in_flight,
                count(*) FILTER (WHERE state = 'retry_wait') AS retry_wait, count(*) FILTER (WHERE state = 'matched') AS matched,
                count(*) FILTER (WHERE state = 'no_match') AS no_match, count(*) FILTER (WHERE state = 'failed') AS failed,
                count(*) FILTER (WHERE state = 'skipped') AS skipped
            FROM old_rows GROUP BY job_id, chunk
        ) d
        WHERE c.job_id = d.job_id AND c.chunk = d.chunk;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- why (the three triggers): a status poll reads a row per chunk (1,000 for 100,000 rows), not the job's rows; they cost 0.2 ms per 100-row statement, 2 % of a chunk
CREATE TRIGGER job_rows_counts_insert AFTER INSERT ON job_rows
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_rows_count_delta();
CREATE TRIGGER job_rows_counts_update AFTER UPDATE ON job_rows
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_rows_count_delta();
CREATE TRIGGER job_rows_counts_delete AFTER DELETE ON job_rows
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION job_rows_count_delta();

------------------------------------------------------------------------------
-- Results and markers
------------------------------------------------------------------------------

-- One table per stage. seq only grows, but rows commit out of seq order: read
-- incrementally through the feed. xact is the writing transaction, for the
-- feed's advance. A job's results are read through its rows (job_rows is
-- indexed by job_id, each result table by row_id).
--
-- Each references its row by (job_id, row_id), not the job and the row apart:
-- one check, and a stronger one (a result's job is its row's job). Deleting a
-- job deletes them through its rows.
-- why: a reference to jobs (id) takes a share lock on the job's row for every result saved; with the
-- saves of ten chunks at once that row became a multixact: the ceiling ran at 7,046-8,861 rows/s
-- (ratio 0.38-0.43) against 8,812-9,943 (0.44-0.48) this way, 9,829-10,774 (0.43-0.44) without foreign keys

CREATE TABLE profile_results (
    seq            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id         uuid        NOT NULL,
    row_id         bigint      NOT NULL UNIQUE,
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
    created_at     timestamptz NOT NULL DEFAULT now(),
    xact           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT profile_results_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE
);
CREATE INDEX profile_results_xact ON profile_results (xact);

CREATE TABLE email_results (
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      uuid        NOT NULL,
    row_id      bigint      NOT NULL UNIQUE,
    source      text        NOT NULL DEFAULT 'vendor',
    from_cache  boolean     NOT NULL DEFAULT false,
    profile_url text        NOT NULL,
    email       text        NOT NULL,
    confidence  real,
    verified    boolean,
    raw         jsonb       NOT NULL,
    fetched_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    xact        xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT email_results_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE
);
CREATE INDEX email_results_xact ON email_results (xact);

CREATE TABLE phone_results (
    seq            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id         uuid        NOT NULL,
    row_id         bigint      NOT NULL UNIQUE,
    source         text        NOT NULL DEFAULT 'vendor',
    from_cache     boolean     NOT NULL DEFAULT false,
    profile_url    text        NOT NULL,
    phones         jsonb       NOT NULL,  -- [{"number", "type", "country"}]
    primary_number text,
    primary_type   text,
    raw            jsonb       NOT NULL,
    fetched_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    xact           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT phone_results_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE
);
CREATE INDEX phone_results_xact ON phone_results (xact);

-- A stage that was looked up and found nothing. A result, not an error: never bought again.
CREATE TABLE no_matches (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     uuid        NOT NULL,
    row_id     bigint      NOT NULL,
    stage      text        NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    source     text        NOT NULL DEFAULT 'vendor',
    from_cache boolean     NOT NULL DEFAULT false,
    checked_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    xact       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    UNIQUE (row_id, stage),
    CONSTRAINT no_matches_row_fkey FOREIGN KEY (job_id, row_id) REFERENCES job_rows (job_id, id) ON DELETE CASCADE
);
CREATE INDEX no_matches_xact ON no_matches (xact);

-- No index on job_id in the four tables above: no query of enrichq reads them by it (an ETL job joins job_rows).
-- why: one index entry in four per result less: +7.6 % end to end (8,860 -> 9,532 rows/s, means of three runs in turns)

------------------------------------------------------------------------------
-- Money: the ledger, vendor accounts, reservations and settlements
------------------------------------------------------------------------------

-- The credit ledger: one row per vendor call that may have cost credits,
-- reserved before the call (worst case), settled after it (what the vendor
-- charged). No cascade: what a job spent stays on record.
CREATE TABLE credit_ledger (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            uuid        NOT NULL REFERENCES jobs (id),
    row_id            bigint,              -- single lookups; NULL for a bulk call
    row_count         integer     NOT NULL DEFAULT 1,
    stage             text        NOT NULL, -- profile, email, phone, or bulk
    stage_credits     jsonb,                -- bulk calls: {"profile": n, "email": n, "phone": n} by the cost table
    endpoint          text        NOT NULL,
    idempotency_key   text        NOT NULL,
    reserved          bigint      NOT NULL CHECK (reserved >= 0),
    charged           bigint,               -- NULL while reserved
    charge_reported   boolean     NOT NULL DEFAULT false, -- true: from X-Credits-Charged; false: our cost table
    -- Answered as a replay of an earlier send of its key: the cost table prices
    -- the replayed answer at this many credits (what the earlier, billed send cost).
    replay_price      bigint      CHECK (replay_price >= 0),
    credits_remaining bigint,               -- X-Credits-Remaining, when sent
    status            text        NOT NULL DEFAULT 'reserved'
                      CHECK (status IN ('reserved', 'settled', 'released', 'unknown')),
    error             text        NOT NULL DEFAULT '',
    account           text,                 -- the vendor key's id (account_usage); NULL: not tracked
    account_month     date,
    reserved_at       timestamptz NOT NULL DEFAULT now(),
    -- The call was about to leave: set right before the request is written,
    -- and only while the reservation is open. A reservation without it was
    -- never sent, and is released rather than counted at its worst case.
    sent_at           timestamptz,
    expires_at        timestamptz NOT NULL, -- a reservation not settled by then is counted as spent
    settled_at        timestamptz
);
-- A job's calls, and the earlier sends of a call by its Idempotency-Key (reconciliation).
CREATE INDEX credit_ledger_job_key ON credit_ledger (job_id, idempotency_key);
CREATE INDEX credit_ledger_open ON credit_ledger (expires_at) WHERE status = 'reserved';
-- A job's open calls (the explain step, and the finisher's check of them).
CREATE INDEX credit_ledger_job_open ON credit_ledger (job_id) WHERE status IN ('reserved', 'unknown');
CREATE INDEX credit_ledger_account ON credit_ledger (account, account_month);

-- Credits of one vendor key in one calendar month (UTC), across every job.
CREATE TABLE account_usage (
    account           text        NOT NULL, -- the vendor key's id: sha256 prefix, never the key
    month             date        NOT NULL, -- first day of the month, UTC
    reserved          bigint      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    spent             bigint      NOT NULL DEFAULT 0,
    credits_remaining bigint,               -- the last X-Credits-Remaining the vendor sent
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, month)
);

-- What enrichq learns of the vendor behind each key. honours_keys is NULL
-- until the vendor is seen to replay an Idempotency-Key; only then may a
-- fresh retry settle earlier sends of its key at 0.
CREATE TABLE vendor_accounts (
    account      text        PRIMARY KEY CHECK (account <> ''), -- config.VendorAccount: sha256 prefix of the key, never the key
    honours_keys boolean,                                        -- NULL: not known yet
    learned_at   timestamptz,                                    -- when honours_keys was learned
    learned_from bigint,                                         -- the ledger id of the replay it was learned from
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A reservation and a settlement are one function call each: one round trip,
-- and the job's row (which every call of the job updates) is locked for the
-- function's few statements, not across a client's round trips. Both lock the
-- job's row first, then the account's: one order, no deadlock.
-- why (both functions): reservations and settlements waiting on the job's row were 110 of 535 samples of a ceiling run

-- enrichq_reserve holds p_credits for one call against the job's budget and
-- the account's monthly allowance (p_allowance NULL: no cap; p_account NULL:
-- not tracked). outcome: 'ok' (ledger_id set), 'not_found', 'not_running',
-- 'job_budget' or 'account_budget' (spent, reserved and budget say why),
-- 'no_account_row' (the account's row of this month does not exist yet).
-- +goose StatementBegin
CREATE FUNCTION enrichq_reserve(p_job uuid, p_row bigint, p_row_count integer, p_stage text, p_endpoint text,
    p_key text, p_credits bigint, p_ttl_ms bigint, p_account text, p_allowance bigint,
    OUT outcome text, OUT ledger_id bigint, OUT state text, OUT spent bigint, OUT reserved bigint, OUT budget bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
    v_found boolean;
BEGIN
    -- 1. The job's row.
    UPDATE jobs j SET credits_reserved = j.credits_reserved + p_credits, updated_at = now()
    WHERE j.id = p_job AND j.state IN ('queued', 'running')
      AND (j.budget_credits IS NULL OR j.credits_spent + j.credits_reserved + p_credits <= j.budget_credits);
    IF NOT FOUND THEN
        SELECT j.state, j.credits_spent, j.credits_reserved, j.budget_credits INTO state, spent, reserved, budget
        FROM jobs j WHERE j.id = p_job;
        IF NOT FOUND THEN
            outcome := 'not_found';
        ELSIF state NOT IN ('queued', 'running') THEN
            outcome := 'not_running';
        ELSE
            outcome := 'job_budget';
        END IF;
        RETURN;
    END IF;
    -- 2. The account's row.
    IF p_account IS NOT NULL THEN
        UPDATE account_usage a SET reserved = a.reserved + p_credits, updated_at = now()
        WHERE a.account = p_account AND a.month = v_month
          AND (p_allowance IS NULL OR a.spent + a.reserved + p_credits <= p_allowance);
        IF NOT FOUND THEN
            -- Give the job's credits back (its row is ours until commit: nobody saw them).
            UPDATE jobs j SET credits_reserved = j.credits_reserved - p_credits WHERE j.id = p_job;
            SELECT a.spent, a.reserved INTO spent, reserved FROM account_usage a WHERE a.account = p_account AND a.month = v_month;
            v_found := FOUND;
            budget := p_allowance;
            outcome := CASE WHEN v_found THEN 'account_budget' ELSE 'no_account_row' END;
            RETURN;
        END IF;
    END IF;
    -- 3. The ledger's row.
    INSERT INTO credit_ledger (job_id, row_id, row_count, stage, endpoint, idempotency_key, reserved, expires_at, account, account_month)
    VALUES (p_job, p_row, p_row_count, p_stage, p_endpoint, p_key, p_credits, now() + p_ttl_ms * interval '1 millisecond',
        p_account, CASE WHEN p_account IS NOT NULL THEN v_month END)
    RETURNING id INTO ledger_id;
    outcome := 'ok';
END
$$;
-- +goose StatementEnd

-- enrichq_close_reservation moves a ledger row from reserved (or unknown,
-- to settled) to p_status, charged p_charged (NULL: the reservation), and
-- moves the job's and the account's credits accordingly. It returns false
-- when the row was closed already (idempotent).
-- +goose StatementBegin
CREATE FUNCTION enrichq_close_reservation(p_id bigint, p_status text, p_charged bigint, p_reported boolean,
    p_remaining bigint, p_error text, p_split jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    l record;
    v_new bigint;
    v_held bigint;
    v_counted bigint;
BEGIN
    SELECT c.id, c.job_id, c.reserved, c.status, coalesce(c.charged, 0) AS charged, c.account, c.account_month INTO l
    FROM credit_ledger c
    WHERE c.id = p_id AND (c.status = 'reserved' OR (c.status = 'unknown' AND p_status = 'settled'))
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    v_new := coalesce(p_charged, l.reserved);
    UPDATE credit_ledger c SET status = p_status, charged = v_new, charge_reported = p_reported,
        credits_remaining = p_remaining, error = p_error, settled_at = now(),
        stage_credits = coalesce(p_split, c.stage_credits)
    WHERE c.id = p_id;
    v_held := CASE WHEN l.status = 'reserved' THEN l.reserved ELSE 0 END;
    v_counted := CASE WHEN l.status = 'unknown' THEN l.charged ELSE 0 END;
    UPDATE jobs j SET credits_reserved = j.credits_reserved - v_held, credits_spent = j.credits_spent + v_new - v_counted,
        updated_at = now()
    WHERE j.id = l.job_id;
    IF l.account IS NOT NULL THEN
        UPDATE account_usage a SET reserved = a.reserved - v_held, spent = a.spent + v_new - v_counted,
            credits_remaining = coalesce(p_remaining, a.credits_remaining), updated_at = now()
        WHERE a.account = l.account AND a.month = l.account_month;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

------------------------------------------------------------------------------
-- Cache and claims
------------------------------------------------------------------------------

-- The keys (tenant, stage, normalised input) compare bytes, whatever the
-- database's collation: they are only compared for equality, and the one
-- order in which statements lock several claims is named in the code
-- (store.claimKeyOrder).

-- Answers already paid for, by tenant, stage and normalised input: hits and no-matches.
CREATE TABLE lookup_cache (
    tenant     text        COLLATE "C" NOT NULL CHECK (tenant <> ''), -- why: in an en_US.UTF-8 database, 7,785 -> 10,481 rows/s end to end (means, in turns)
    stage      text        COLLATE "C" NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    input_key  text        COLLATE "C" NOT NULL,
    matched    boolean     NOT NULL,
    result     jsonb,                 -- the answer; NULL for a no-match
    fetched_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, stage, input_key)
);

-- A lookup being bought right now: whoever holds the claim calls the vendor,
-- the others wait for its answer in lookup_cache. A crash of Postgres loses
-- the claims of the inputs being bought at that moment (the rows' leases are
-- kept): at worst an input two chunks wanted then is bought twice.
CREATE UNLOGGED TABLE lookup_claims ( -- why: no WAL, no fsync: claims 26 -> 16 ms and saves 94 -> 78 ms a chunk
    tenant     text        COLLATE "C" NOT NULL CHECK (tenant <> ''), -- why: as lookup_cache's keys (7,785 -> 10,481 rows/s in en_US.UTF-8)
    stage      text        COLLATE "C" NOT NULL,
    input_key  text        COLLATE "C" NOT NULL,
    token      uuid        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, stage, input_key)
);
CREATE INDEX lookup_claims_token ON lookup_claims (token);

------------------------------------------------------------------------------
-- The feed
------------------------------------------------------------------------------

-- One incremental feed of every result and no-match marker, read with
-- "WHERE seq > $last ORDER BY seq" without ever skipping or repeating a line.
--
-- The result tables' own seq cannot do it: an identity value is handed out
-- at insert, but transactions commit in any order, so a reader past seq 11
-- would never see seq 10 committing a moment later. The feed's position is
-- handed out later, by results_feed_advance(), one call at a time (a row lock
-- on results_feed_cursor), to rows already committed, and each call commits
-- before the next can hand out more: a reader sees positions in the order
-- they were handed out.
--
-- An advance finds the rows not logged yet by their writing transaction
-- (xact): every row visible in the last advance's snapshot is logged, so a
-- row is new exactly when its transaction was not visible in that snapshot.
-- Only rows of transactions from the last horizon on (pg_snapshot_xmin of that
-- snapshot) are looked at.
--
-- An erasure withdraws lines: it writes, in its own transaction and under the
-- feed's turn, a line of kind 'deleted' for each, naming its position
-- (deleted_seq), so that an ETL job deletes too.

-- The feed's positions: one line per result row or no-match marker, and the
-- erasures' deleted lines. Written only by results_feed_advance() and an
-- erasure. No unique key on (kind, source_seq): the snapshot test keeps each line once.
-- why (no unique key, the snapshot test): 1.09 -> 0.91 s for the 180,000 lines of a 100,000-row job, logged alone
CREATE TABLE results_feed_log (
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- the feed position
    tenant      text        NOT NULL CHECK (tenant <> ''),
    -- No foreign key to jobs: a deleted job's lines stay, and the results_feed view (which joins job_rows) hides them.
    job_id      uuid        NOT NULL, -- why: with one, each line's check locks the running job's row: an advance took 4.1 s in the ceiling run; without (and the in-memory sort) 6,200 -> 7,700 rows/s
    row_id      bigint      NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('profile', 'email', 'phone', 'no_match', 'deleted')),
    stage       text        NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    source_seq  bigint      NOT NULL, -- seq in profile_results, email_results, phone_results or no_matches
    deleted_seq bigint,               -- kind deleted: the position of the line withdrawn
    logged_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX results_feed_log_tenant ON results_feed_log (tenant, seq);
CREATE INDEX results_feed_log_job ON results_feed_log (job_id);
-- Retention's way to a tenant's old lines.
CREATE INDEX results_feed_log_tenant_logged ON results_feed_log (tenant, logged_at);

-- The turn (a row lock on the one row), and where the next advance starts looking.
CREATE TABLE results_feed_cursor (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    horizon     xid8        NOT NULL, -- every committed row of a transaction older than this is logged
    seen        pg_snapshot NOT NULL, -- the last advance's snapshot: every row visible in it is logged
    advanced_at timestamptz NOT NULL DEFAULT now()
);
-- No result exists yet: any transaction that writes one is not visible in this snapshot.
INSERT INTO results_feed_cursor (horizon, seen) SELECT pg_snapshot_xmin(s), s FROM pg_current_snapshot() s;

-- results_feed_advance logs the committed results not in the feed yet and
-- returns how many. Safe to call from any number of sessions at once (they
-- take turns); call it in autocommit, never inside a long transaction: the
-- turn is held until commit.
-- +goose StatementBegin
CREATE FUNCTION results_feed_advance() RETURNS bigint
LANGUAGE plpgsql
-- The sort of a big advance (180,000 lines for a 100,000-row job) in memory, not on disk; and no ON CONFLICT.
SET work_mem = '64MB' -- why: 2.6 -> 1.7 s for 180,000 lines logged alone
AS $$
DECLARE
    v_since  xid8;
    v_seen   pg_snapshot;
    v_logged bigint;
BEGIN
    -- The statements below must each take a new snapshot, the insert's after the turn was
    -- taken: READ COMMITTED (autocommit, as documented).
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'results_feed_advance() runs at READ COMMITTED only (call it in autocommit), not in a % transaction',
            upper(current_setting('transaction_isolation')) USING ERRCODE = '25001';
    END IF;
    -- Take the turn. Positions handed out below commit before the next advance gets it.
    SELECT c.horizon, c.seen INTO v_since, v_seen FROM results_feed_cursor c WHERE c.singleton FOR UPDATE;

    -- One statement, one snapshot: the rows it reads and the snapshot it records.
    WITH snap AS MATERIALIZED (
        SELECT pg_current_snapshot() AS s
    ), logged AS (
        INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq)
        SELECT j.tenant, x.job_id, x.row_id, x.kind, x.stage, x.seq
        FROM (
            SELECT job_id, row_id, 'profile' AS kind, 'profile' AS stage, seq, xact FROM profile_results WHERE xact >= v_since
            UNION ALL
            SELECT job_id, row_id, 'email', 'email', seq, xact FROM email_results WHERE xact >= v_since
            UNION ALL
            SELECT job_id, row_id, 'phone', 'phone', seq, xact FROM phone_results WHERE xact >= v_since
            UNION ALL
            SELECT job_id, row_id, 'no_match', stage, seq, xact FROM no_matches WHERE xact >= v_since
        ) x
        JOIN jobs j ON j.id = x.job_id
        -- Logged already: everything visible in the last advance's snapshot.
        WHERE NOT pg_visible_in_snapshot(x.xact, v_seen)
        -- A transaction's lines together; a row's in stage order.
        ORDER BY x.xact, x.row_id, array_position(ARRAY['profile', 'email', 'phone'], x.stage), x.kind
        RETURNING 1
    ), moved AS (
        UPDATE results_feed_cursor SET seen = snap.s, horizon = greatest(horizon, pg_snapshot_xmin(snap.s)), advanced_at = now()
        FROM snap WHERE singleton
        RETURNING 1
    )
    SELECT count(*) INTO v_logged FROM logged;
    RETURN v_logged;
END
$$;
-- +goose StatementEnd

-- results_feed: the feed with each line's input row and what was found. Read it with
--   SELECT results_feed_advance();
--   SELECT * FROM results_feed WHERE seq > $last ORDER BY seq LIMIT 10000;
-- kind says which payload columns are set: profile (name ... technographics), email (email,
-- confidence, verified), phone (phones, primary_number, primary_type), no_match (none; stage
-- names the lookup that found nothing), deleted (deleted_seq: the line withdrawn; its row is
-- gone). Other lines of a row deleted since are hidden.
-- Columns are only ever added at the end (CREATE OR REPLACE VIEW allows no other place, and a
-- reader of SELECT * keeps its positions): input_domain and deleted_seq are there.
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
    l.deleted_seq
FROM results_feed_log l
LEFT JOIN job_rows r ON r.id = l.row_id
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq
WHERE r.id IS NOT NULL OR l.kind = 'deleted';

------------------------------------------------------------------------------
-- Tenants
------------------------------------------------------------------------------

-- A tenant and its settings, made with its first API key (and for the tenants
-- of ENRICHQ_API_KEYS when the API starts). Only API keys reference it; the
-- other tables name their tenant and check only that it is not empty.
CREATE TABLE tenants (
    id                        text        PRIMARY KEY CHECK (id <> ''),
    default_job_budget        bigint      DEFAULT 10000 CHECK (default_job_budget >= 0), -- credits; NULL: jobs submitted without a budget have none
    monthly_allowance         bigint      DEFAULT 100000 CHECK (monthly_allowance >= 0), -- credits per calendar month (UTC); NULL: no cap
    retention_seconds         bigint      CHECK (retention_seconds > 0),                 -- how long rows, results, markers, cache entries and feed lines are kept; NULL: until erased
    -- Signs the tenant's completion callbacks; rotated through the API. A
    -- volatile default is drawn per row: 244 random bits for every tenant.
    webhook_secret            text        NOT NULL
                              DEFAULT 'whsec_' || replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''),
    webhook_secret_rotated_at timestamptz NOT NULL DEFAULT now(),
    created_at                timestamptz NOT NULL DEFAULT now()
);

-- The credits each tenant spent and holds in each calendar month (UTC), kept
-- by the triggers below on the credit ledger; a reservation that would take a
-- tenant past its monthly allowance fails.
CREATE TABLE tenant_usage (
    tenant     text        NOT NULL CHECK (tenant <> ''),
    month      date        NOT NULL, -- first day of the month, UTC: the month the credits were reserved in
    reserved   bigint      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    spent      bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, month)
);

-- enrichq_tenant_usage moves a ledger row's credits into its tenant's month:
-- held while the row is reserved, its charge once closed (any other status).
-- A new reservation that takes the tenant past its monthly allowance raises
-- SQLSTATE EQ001 (DETAIL: "spent,reserved,allowance" before it), which undoes
-- the whole reservation (store.Reserve: a *BudgetError of scope "tenant").
-- Lock order: the insert trigger runs inside enrichq_reserve after the job's
-- and the account's rows; the update trigger is deferred to the commit, so a
-- settlement too takes the tenant's row after the job's and the account's.
-- +goose StatementBegin
CREATE FUNCTION enrichq_tenant_usage() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_month     date   := date_trunc('month', NEW.reserved_at AT TIME ZONE 'UTC')::date;
    v_held      bigint := CASE WHEN NEW.status = 'reserved' THEN NEW.reserved ELSE 0 END;
    v_spent     bigint := CASE WHEN NEW.status = 'reserved' THEN 0 ELSE coalesce(NEW.charged, 0) END;
    v_tenant    text;
    v_allowance bigint;
    v_reserved  bigint;
    v_total     bigint;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        v_held  := v_held - CASE WHEN OLD.status = 'reserved' THEN OLD.reserved ELSE 0 END;
        v_spent := v_spent - CASE WHEN OLD.status = 'reserved' THEN 0 ELSE coalesce(OLD.charged, 0) END;
    END IF;
    IF v_held = 0 AND v_spent = 0 THEN
        RETURN NULL;
    END IF;
    SELECT j.tenant, t.monthly_allowance INTO v_tenant, v_allowance
    FROM jobs j LEFT JOIN tenants t ON t.id = j.tenant WHERE j.id = NEW.job_id;
    UPDATE tenant_usage u SET reserved = u.reserved + v_held, spent = u.spent + v_spent, updated_at = now()
    WHERE u.tenant = v_tenant AND u.month = v_month
    RETURNING u.reserved, u.spent + u.reserved INTO v_reserved, v_total;
    IF NOT FOUND THEN
        INSERT INTO tenant_usage AS u (tenant, month, reserved, spent) VALUES (v_tenant, v_month, v_held, v_spent)
        ON CONFLICT (tenant, month) DO UPDATE SET reserved = u.reserved + excluded.reserved, spent = u.spent + excluded.spent, updated_at = now()
        RETURNING u.reserved, u.spent + u.reserved INTO v_reserved, v_total;
    END IF;
    IF TG_OP = 'INSERT' AND v_allowance IS NOT NULL AND v_total > v_allowance THEN
        RAISE EXCEPTION 'tenant %: % credits would pass the monthly allowance of %', v_tenant, v_held, v_allowance
            USING ERRCODE = 'EQ001', DETAIL = format('%s,%s,%s', v_total - v_reserved - v_spent, v_reserved - v_held, v_allowance);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER credit_ledger_tenant_usage_insert AFTER INSERT ON credit_ledger
    FOR EACH ROW EXECUTE FUNCTION enrichq_tenant_usage();
CREATE CONSTRAINT TRIGGER credit_ledger_tenant_usage_update AFTER UPDATE ON credit_ledger
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION enrichq_tenant_usage();

------------------------------------------------------------------------------
-- Keys
------------------------------------------------------------------------------

-- API keys: only a SHA-256 of each key is kept; the key is shown once, when it is created.
CREATE TABLE api_keys (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant         text        NOT NULL REFERENCES tenants (id) CHECK (tenant <> ''),
    name           text        NOT NULL DEFAULT '',
    prefix         text        NOT NULL,        -- the key's first characters, to recognise it in lists
    key_sha256     bytea       NOT NULL UNIQUE,
    -- What the key may do (docs/api.md, "Scopes").
    scopes         text[]      NOT NULL DEFAULT '{read,submit}'
                   CHECK (cardinality(scopes) > 0 AND scopes <@ '{read,submit,admin}'),
    -- The ceiling on the budget of a job an AI assistant submits or raises
    -- through MCP (docs/mcp.md), decided by the operator when handing the key
    -- to an assistant. NULL: the operator's default (ENRICHQ_MCP_MAX_BUDGET).
    mcp_max_budget bigint      CHECK (mcp_max_budget >= 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    last_used_at   timestamptz,
    revoked_at     timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant);

------------------------------------------------------------------------------
-- Webhooks
------------------------------------------------------------------------------

-- One delivery per finished job with a callback_url, retried with backoff until the receiver says 2xx.
CREATE TABLE webhook_deliveries (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id          uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    event           text        NOT NULL DEFAULT 'job.finished',
    url             text        NOT NULL,
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    in_flight_until timestamptz,          -- an attempt is being made until then (per-tenant concurrency)
    last_status     integer,              -- the receiver's HTTP status, NULL when no answer
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    UNIQUE (job_id, event)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

------------------------------------------------------------------------------
-- The platform
------------------------------------------------------------------------------

-- The platform's own API: members who connected their account (OAuth 2.0,
-- authorization code with PKCE), their tokens encrypted at rest, the pending
-- connect requests, and member sync jobs. A member sync job is a row of jobs
-- with one job_rows row per member; its profiles go to profile_results with
-- source = 'platform'. Its chunks are dispatched from platform_sync_chunks
-- (task platform:sync), never from job_chunks, so the vendor pipeline never
-- sees its rows.

-- A member who connected their platform account to a tenant.
CREATE TABLE platform_members (
    id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant              text        NOT NULL CHECK (tenant <> ''),
    member_id           text        NOT NULL,             -- the platform's id of the member ("id", else OpenID "sub")
    name                text        NOT NULL DEFAULT '',
    email               text        NOT NULL DEFAULT '',
    headline            text        NOT NULL DEFAULT '',
    status              text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'needs_reauth')),
    status_reason       text        NOT NULL DEFAULT '',  -- why needs_reauth
    token               bytea       NOT NULL,             -- AES-256-GCM of the OAuth token (access and refresh); never plaintext
    token_issued_at     timestamptz NOT NULL,
    token_expires_at    timestamptz,                      -- NULL: the platform gave no lifetime
    refreshable         boolean     NOT NULL DEFAULT false, -- a refresh token is held
    refresh_expires_at  timestamptz,                      -- NULL: no refresh token, or its life was not given
    -- A token refresh is claimed for a while, rather than holding the member's
    -- row locked across the call to the platform.
    refresh_claim       uuid,                             -- who is refreshing the token now
    refresh_claim_until timestamptz,                      -- and until when the claim holds (a lost refresher's lapses)
    scopes              text[]      NOT NULL DEFAULT '{}',  -- granted
    profile             jsonb,                            -- the last /rest/me answer
    connected_at        timestamptz NOT NULL,
    refreshed_at        timestamptz,
    last_synced_at      timestamptz,
    expiry_warned_at    timestamptz,                      -- the scheduler's last warning that the connection ends soon
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, member_id)
);
CREATE INDEX platform_members_tenant ON platform_members (tenant, connected_at, id);
CREATE INDEX platform_members_expiry ON platform_members (token_expires_at) WHERE status = 'active';

-- A connect request on its way through the consent screen: the state sent
-- (by its SHA-256, never the state itself), the tenant it is for, and the
-- PKCE verifier (encrypted). Single use; refused after expires_at.
CREATE TABLE platform_connect_states (
    state_hash bytea       PRIMARY KEY,
    tenant     text        NOT NULL CHECK (tenant <> ''),
    verifier   bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX platform_connect_states_expiry ON platform_connect_states (expires_at);

-- The member of a member sync row.
ALTER TABLE job_rows ADD CONSTRAINT job_rows_platform_member_fkey
    FOREIGN KEY (platform_member) REFERENCES platform_members (id);
CREATE INDEX job_rows_platform_member ON job_rows (platform_member) WHERE platform_member IS NOT NULL;

-- Dispatch bookkeeping of member sync jobs (job_chunks' twin for platform:sync tasks).
CREATE TABLE platform_sync_chunks (
    job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    chunk       integer     NOT NULL,
    enqueued_at timestamptz,
    PRIMARY KEY (job_id, chunk)
);


------------------------------------------------------------------------------
-- Uploads
------------------------------------------------------------------------------

-- A file sent once, estimated and submitted later by its id. The original
-- bytes are kept, with how to read them (format, column mapping, encoding,
-- sheet): an estimate or a submit by id runs the very parser an inline upload
-- runs, with the roles chosen then. The counts and the column mapping of the
-- first parse are kept for the upload's view. API replicas share nothing but
-- Postgres, so the bytes live here, bounded by the upload limit and a
-- per-tenant cap (internal/service).
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

------------------------------------------------------------------------------
-- Web sessions
------------------------------------------------------------------------------

-- The web page (internal/web) signs a person in with an API key and keeps a
-- server-side session, so the key never leaves the sign-in form. The cookie
-- holds a random token; only its SHA-256 is kept here, so a read of this
-- table signs nobody in. A session carries the key's tenant, id and scopes as
-- they were at sign-in, the CSRF token of its forms, an absolute end and an
-- idle end (each use moves the idle end on).
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

------------------------------------------------------------------------------
-- Personal data: erasures, suppressions, the audit log
------------------------------------------------------------------------------

-- The controller's duties (docs/personal-data.md). Retention is
-- tenants.retention_seconds and jobs.purged_at; an erasure's feed lines are
-- results_feed_log's deleted lines.

-- One per POST /v1/erasures, with its receipt: counts by table, never the
-- person. No foreign key to tenants: jobs name their tenant without one either.
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

-- Keyed hashes (HMAC, ENRICHQ_ERASURE_KEY) of an erased person's inputs: a
-- later upload of one of them is skipped until the erasure is lifted.
CREATE TABLE suppressions (
    tenant      text  NOT NULL CHECK (tenant <> ''),
    person_hash bytea NOT NULL,                   -- HMAC-SHA256 of one normalised input of the person
    erasure_id  uuid  NOT NULL REFERENCES erasures (id) ON DELETE CASCADE,
    PRIMARY KEY (tenant, person_hash, erasure_id)
);
CREATE INDEX suppressions_erasure ON suppressions (erasure_id);

-- Who read, erased or changed what. Append-only: a trigger refuses UPDATE,
-- DELETE and TRUNCATE.
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

-- +goose Down
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
DROP TABLE suppressions;
DROP TABLE erasures;
DROP TABLE web_sessions;
DROP TABLE uploads;
DROP TABLE platform_sync_chunks;
ALTER TABLE job_rows DROP CONSTRAINT job_rows_platform_member_fkey;
DROP TABLE platform_connect_states;
DROP TABLE platform_members;
DROP TABLE webhook_deliveries;
DROP TABLE api_keys;
DROP TRIGGER credit_ledger_tenant_usage_update ON credit_ledger;
DROP TRIGGER credit_ledger_tenant_usage_insert ON credit_ledger;
DROP FUNCTION enrichq_tenant_usage();
DROP TABLE tenant_usage;
DROP TABLE tenants;
DROP VIEW results_feed;
DROP FUNCTION results_feed_advance();
DROP TABLE results_feed_cursor;
DROP TABLE results_feed_log;
DROP TABLE lookup_claims;
DROP TABLE lookup_cache;
DROP FUNCTION enrichq_close_reservation(bigint, text, bigint, boolean, bigint, text, jsonb);
DROP FUNCTION enrichq_reserve(uuid, bigint, integer, text, text, text, bigint, bigint, text, bigint);
DROP TABLE vendor_accounts;
DROP TABLE account_usage;
DROP TABLE credit_ledger;
DROP TABLE no_matches;
DROP TABLE phone_results;
DROP TABLE email_results;
DROP TABLE profile_results;
DROP TABLE job_chunk_counts;
DROP TABLE job_chunks;
DROP TABLE job_input_extras;
DROP TABLE job_rows;
DROP FUNCTION job_rows_count_delta();
DROP TABLE jobs;
