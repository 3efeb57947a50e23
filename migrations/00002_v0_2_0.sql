-- enrichq's schema changes of 0.2.0 since 0.1.0 (00001_schema.sql). Released:
-- never edited again; a later change is a new file (released_test.go holds
-- every released file's digest). Sections, in the order they apply.

-- +goose Up

------------------------------------------------------------------------------
-- Idempotency keys scoped to their kind of request
------------------------------------------------------------------------------

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

------------------------------------------------------------------------------
-- MCP spend per key and UTC day
------------------------------------------------------------------------------

-- The budgets an AI assistant committed through MCP, per API key and UTC
-- day (docs/mcp.md, "The daily ceiling"): a job's budget at submit_job, the
-- increase of a raise_budget. The per-job ceiling (api_keys.mcp_max_budget) bounds one call;
-- this bounds the day's sum, so that four submits at the ceiling do not
-- commit four times it. One row per key and day, grown in the statement
-- that checks it against the ceiling (store.CommitMCPSpend), so that two
-- concurrent submits cannot both pass.
--
-- key_id is the principal's KeyID: a stored key's id, or "env:" and a digest
-- prefix for a key of ENRICHQ_API_KEYS (which has no api_keys row), hence
-- no foreign key.
CREATE TABLE mcp_daily_spend (
    tenant     text        NOT NULL CONSTRAINT mcp_daily_spend_tenant_check CHECK (tenant <> ''),
    key_id     text        NOT NULL,
    day        date        NOT NULL,
    credits    bigint      NOT NULL CONSTRAINT mcp_daily_spend_credits_check CHECK (credits >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, key_id, day)
);

-- A key's own daily ceiling, set with `api keys create --mcp-max-daily-budget`;
-- NULL: ENRICHQ_MCP_MAX_DAILY_BUDGET, else 5 times the key's per-job ceiling.
ALTER TABLE api_keys
    ADD COLUMN mcp_max_daily_budget bigint CONSTRAINT api_keys_mcp_max_daily_budget_check CHECK (mcp_max_daily_budget >= 0);

------------------------------------------------------------------------------
-- Stored uploads searchable by an erasure
------------------------------------------------------------------------------

-- The people a stored upload names, searchable by an erasure however the
-- file wrote them (any case, a URL with www. or a trailing slash, inside an
-- .xlsx's zip or a UTF-16 file): the keyed hashes (HMAC-SHA256 under the
-- erasure key, their first 16 bytes) of each row's normalised identities,
-- concatenated. NULL: stored while no erasure key was set; an erasure then
-- searches the file's bytes only.
ALTER TABLE uploads ADD COLUMN person_hashes bytea;

------------------------------------------------------------------------------
-- Surviving a failover; a leader through a transaction pooler
------------------------------------------------------------------------------

-- What a failover (or any cut connection) needs to be survived without a
-- guess, and what leader election needs to work through a transaction pooler.
--
-- commit_marks: a statement that must not be applied twice (a credit
-- reservation, a chunk's save, a submitted job) writes a mark of its own, a
-- token made by the client, in its own transaction. When the answer to its
-- commit is lost, the client inserts the same token with fenced = true: the
-- insert waits for the first transaction if it still runs, and then either
-- finds its mark (it committed: ids is what it wrote) or stands in its place
-- (it did not, and now never can). Marks older than a day are pruned.
--
-- leader_leases: one row per leadership (the scheduler's sweeps). The holder
-- renews it by bumping version; another process takes it once it has seen
-- the same version, unchanged, for ttl_ms by its own clock. No session state:
-- it works through PgBouncer's transaction pooling, unlike a session advisory
-- lock.
CREATE TABLE commit_marks (
    token   uuid        PRIMARY KEY,
    ids     bigint[],                       -- what the marked statement wrote (ledger id, row ids)
    fenced  boolean     NOT NULL DEFAULT false, -- written by the client that lost the answer: the marked statement did not commit
    made_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX commit_marks_made_at ON commit_marks (made_at);

CREATE TABLE leader_leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    version    bigint      NOT NULL,
    ttl_ms     bigint      NOT NULL CHECK (ttl_ms > 0),
    renewed_at timestamptz NOT NULL DEFAULT now() -- for people: the database's clock decides nothing
);

------------------------------------------------------------------------------
-- Prices learned from the vendor
------------------------------------------------------------------------------

-- What the vendor charges, learned from its own answers, per vendor key; and
-- the ledger's marks of prices inferred and charges the balance witness
-- settled.
--
-- vendor_prices: one row per vendor key (vendor_accounts) and price class
-- (enrich.PriceClass: "profile/name_company/no_match", "email/miss"...).
-- credits is the price the vendor's last fresh answer of the class showed
-- (X-Credits-Charged), answers how many fresh answers agree with it,
-- highest the most it has ever charged for the class (a reservation never
-- holds less), previous and changed_at the price before the last change.
-- credit_ledger.replay_class: the call was answered as a replay of an answer
-- of that class (the billed earlier send is priced by the class's learned
-- price, which may come later). credit_ledger.witnessed_at: the vendor's
-- balance readings (X-Credits-Remaining) around the call pinned its charge,
-- and it was settled to them then.
CREATE TABLE vendor_prices (
    account      text        NOT NULL REFERENCES vendor_accounts (account) ON DELETE CASCADE,
    class        text        NOT NULL CHECK (class <> ''),
    credits      bigint      NOT NULL CHECK (credits >= 0),
    highest      bigint      NOT NULL CHECK (highest >= credits),
    answers      bigint      NOT NULL DEFAULT 1 CHECK (answers >= 1),
    previous     bigint      CHECK (previous >= 0),
    learned_from bigint,                                 -- the ledger id of the answer that showed credits
    learned_at   timestamptz NOT NULL DEFAULT now(),     -- first seen
    changed_at   timestamptz,                            -- when credits last changed
    seen_at      timestamptz NOT NULL DEFAULT now(),     -- the last agreeing answer counted
    PRIMARY KEY (account, class)
);

ALTER TABLE credit_ledger
    ADD COLUMN replay_class text,
    ADD COLUMN witnessed_at timestamptz;

-- enrichq_resettle corrects the charge of a settled call (the balance
-- witness pinned it): the job's and the account's spent move by the
-- difference, the tenant's by the ledger's update trigger. It returns
-- false when the call is not settled.
-- +goose StatementBegin
CREATE FUNCTION enrichq_resettle(p_id bigint, p_charged bigint, p_error text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    l record;
BEGIN
    SELECT c.id, c.job_id, coalesce(c.charged, 0) AS charged, c.account, c.account_month INTO l
    FROM credit_ledger c WHERE c.id = p_id AND c.status = 'settled' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE credit_ledger c SET charged = p_charged, charge_reported = false, error = p_error, witnessed_at = now()
    WHERE c.id = p_id;
    UPDATE jobs j SET credits_spent = j.credits_spent + p_charged - l.charged, updated_at = now() WHERE j.id = l.job_id;
    IF l.account IS NOT NULL THEN
        UPDATE account_usage a SET spent = a.spent + p_charged - l.charged, updated_at = now()
        WHERE a.account = l.account AND a.month = l.account_month;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

------------------------------------------------------------------------------
-- Vendors' answer rates per segment
------------------------------------------------------------------------------

-- What each vendor answered, per segment of rows (domain.Segment: the input's
-- kind and the company's country, "name_domain/fr") and stage: the rows
-- asked, those it answered, and the credits it billed for them (its own
-- credits). The automatic vendor order (internal/vendororder) learns its
-- hit rates and expected charges from these; every worker adds its batches
-- and reads the sums, so that what one learns all use. Not a tenant's data:
-- a vendor's rate on a kind of row is the same whoever asked.
CREATE TABLE vendor_rates (
    vendor     text        NOT NULL CHECK (vendor <> ''),
    segment    text        NOT NULL CHECK (segment LIKE '%/%'),
    stage      text        NOT NULL CHECK (stage IN ('profile', 'email', 'phone')),
    asked      bigint      NOT NULL DEFAULT 0 CHECK (asked >= 0),
    found      bigint      NOT NULL DEFAULT 0 CHECK (found >= 0 AND found <= asked),
    credits    bigint      NOT NULL DEFAULT 0 CHECK (credits >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vendor, segment, stage)
);

------------------------------------------------------------------------------
-- Several vendors: the waterfall
------------------------------------------------------------------------------

-- credit_ledger.vendor: the configured name of the vendor the call went to
-- (docs/vendors.md); NULL for calls made before vendors had names (the one
-- vendor of ENRICHQ_VENDOR_*, named "vendor"). Every amount of a ledger
-- row, and of its account's usage, is in budget units: the vendor's
-- credits times its credit_value.
ALTER TABLE credit_ledger ADD COLUMN vendor text CONSTRAINT credit_ledger_vendor_check CHECK (vendor <> '');

-- jobs.vendors: the job's own vendor order (the `vendors` option), names
-- of the vendors file; NULL: the tenants' order, else the learned one.
ALTER TABLE jobs ADD COLUMN vendors text[] CONSTRAINT jobs_vendors_check CHECK (cardinality(vendors) > 0);

-- A vendor taken out of the waterfall for a tenant: it said it was out of
-- credits (402) or refused its key (401, 403). Its rows go to the other
-- vendors until `until` (then one call tries it again); vendor_skips counts,
-- per job, the rows that went without it meanwhile.
CREATE TABLE vendor_outages (
    tenant     text        NOT NULL CONSTRAINT vendor_outages_tenant_check CHECK (tenant <> ''),
    vendor     text        NOT NULL CONSTRAINT vendor_outages_vendor_check CHECK (vendor <> ''),
    reason     text        NOT NULL,
    since      timestamptz NOT NULL DEFAULT now(),
    until      timestamptz NOT NULL,
    PRIMARY KEY (tenant, vendor)
);

-- The rows of a job that skipped a vendor out of the waterfall (by vendor).
CREATE TABLE vendor_skips (
    job_id     uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    vendor     text        NOT NULL,
    rows       bigint      NOT NULL DEFAULT 0 CONSTRAINT vendor_skips_rows_check CHECK (rows >= 0),
    PRIMARY KEY (job_id, vendor)
);

-- enrichq_reserve with the vendor's name for the ledger row (the 0.1.0
-- function, without it, stays for a worker of before).
-- +goose StatementBegin
CREATE FUNCTION enrichq_reserve(p_job uuid, p_row bigint, p_row_count integer, p_stage text, p_endpoint text,
    p_key text, p_credits bigint, p_ttl_ms bigint, p_account text, p_allowance bigint, p_vendor text,
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
    INSERT INTO credit_ledger (job_id, row_id, row_count, stage, endpoint, idempotency_key, reserved, expires_at, account, account_month, vendor)
    VALUES (p_job, p_row, p_row_count, p_stage, p_endpoint, p_key, p_credits, now() + p_ttl_ms * interval '1 millisecond',
        p_account, CASE WHEN p_account IS NOT NULL THEN v_month END, p_vendor)
    RETURNING id INTO ledger_id;
    outcome := 'ok';
END
$$;
-- +goose StatementEnd

------------------------------------------------------------------------------
-- Watches: lists kept fresh on a schedule, and what changed
------------------------------------------------------------------------------

-- A watch re-enriches the distinct inputs of a finished job every period
-- (at least 7 days) under a monthly cap of budget credits (docs/watches.md).
-- next_run_at is the next due slot; its time of day is a hash of the id, so
-- that a tenant's watches spread over the day. A run for a slot is inserted
-- in the transaction that advances next_run_at (the scheduler's
-- watch_scheduler): UNIQUE (watch_id, slot) keeps a slot from being run
-- twice, and a slot overdue is run once by the next sweep.
CREATE TABLE watches (
    id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant              text        NOT NULL CONSTRAINT watches_tenant_check CHECK (tenant <> ''),
    source_job          uuid        NOT NULL,          -- no foreign key: the job may be deleted or purged, the watch holds its inputs
    lookups             text[]      NOT NULL CONSTRAINT watches_lookups_check CHECK (cardinality(lookups) > 0),
    every_seconds       bigint      NOT NULL CONSTRAINT watches_every_check CHECK (every_seconds >= 604800),
    monthly_cap_credits bigint      NOT NULL CONSTRAINT watches_cap_check CHECK (monthly_cap_credits >= 0),
    state               text        NOT NULL DEFAULT 'active' CONSTRAINT watches_state_check CHECK (state IN ('active', 'paused')),
    day_offset_seconds  integer     NOT NULL CONSTRAINT watches_day_offset_check CHECK (day_offset_seconds BETWEEN 0 AND 86399),
    next_run_at         timestamptz NOT NULL,
    cap_reached_month   date,                          -- the month whose cap stopped a run; NULL: none
    callback_url        text,                          -- person.changed webhooks; NULL: none
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE INDEX watches_tenant ON watches (tenant, created_at DESC, id);
CREATE INDEX watches_due ON watches (next_run_at) WHERE state = 'active';

-- One per distinct input of the source job, normalised as rows are, with
-- the last answer known for it (the snapshot a run's answers are compared
-- with). n is the input's number: a run's job_rows.input_row.
CREATE TABLE watch_inputs (
    watch_id    uuid        NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    n           integer     NOT NULL CONSTRAINT watch_inputs_n_check CHECK (n >= 1),
    ref         text        NOT NULL DEFAULT '',
    input_kind  text        NOT NULL CONSTRAINT watch_inputs_kind_check CHECK (input_kind IN ('profile_url', 'email', 'name_company', 'name_domain')),
    profile_url text,
    name        text,
    company     text,
    domain      text,
    email       text,
    role        text,
    -- The snapshot: the last answer, NULL fields where it had none.
    matched     boolean,                               -- NULL: never answered
    found_profile_url text,
    snap_company  text,
    snap_role     text,
    snap_email    text,
    snap_phones   text,                                -- the numbers, sorted, comma-separated
    snap_location text,
    answered_at timestamptz,
    PRIMARY KEY (watch_id, n)
);

-- A watch's runs: one job each, for one due slot (or a run asked for now).
CREATE TABLE watch_runs (
    watch_id  uuid        NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    job_id    uuid        NOT NULL UNIQUE,             -- no foreign key: what the job spent is read while it exists, kept here when it ends
    slot      timestamptz NOT NULL,                    -- the due slot, or the time a run was asked for
    month     date        NOT NULL,                    -- the month (UTC) its credits count against
    credits   bigint      NOT NULL DEFAULT 0,          -- spent, once diffed
    budget    bigint      NOT NULL,                    -- what was left of the month's cap when it started
    manual    boolean     NOT NULL DEFAULT false,
    diffed_at timestamptz,                             -- its answers compared with the snapshots
    created_at timestamptz NOT NULL,
    UNIQUE (watch_id, slot)
);
CREATE INDEX watch_runs_month ON watch_runs (watch_id, month);
CREATE INDEX watch_runs_undiffed ON watch_runs (created_at) WHERE diffed_at IS NULL;

-- What changed: one line per input, field and run. Never a deletion: a
-- no-match where there was a match is a line of kind not_found_any_more.
CREATE TABLE watch_changes (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text        NOT NULL CONSTRAINT watch_changes_tenant_check CHECK (tenant <> ''),
    watch_id   uuid        NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    n          integer     NOT NULL,                   -- the input (watch_inputs.n)
    ref        text        NOT NULL DEFAULT '',
    field      text        NOT NULL CONSTRAINT watch_changes_field_check CHECK (field IN ('company', 'role', 'email', 'phones', 'location', 'match')),
    old        text,
    new        text,
    kind       text        NOT NULL CONSTRAINT watch_changes_kind_check CHECK (kind IN ('changed', 'left', 'not_found_any_more')),
    vendor     text        NOT NULL DEFAULT '',
    job_id     uuid        NOT NULL,
    row_id     bigint      NOT NULL,                   -- the run's row that answered
    at         timestamptz NOT NULL,
    UNIQUE (job_id, n, field)
);
CREATE INDEX watch_changes_watch ON watch_changes (watch_id, id);
CREATE INDEX watch_changes_tenant_at ON watch_changes (tenant, at);

-- The feed's lines of kind changed (source_seq: watch_changes.id), and the
-- view's change columns, at its end.
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_kind_check;
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_kind_check
    CHECK (kind IN ('profile', 'email', 'phone', 'no_match', 'deleted', 'changed'));
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
    c.kind AS change_kind, c.vendor AS change_vendor, c.at AS change_at
FROM results_feed_log l
LEFT JOIN job_rows r ON r.id = l.row_id
LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
LEFT JOIN profile_results p ON l.kind = 'profile' AND p.seq = l.source_seq
LEFT JOIN email_results e ON l.kind = 'email' AND e.seq = l.source_seq
LEFT JOIN phone_results ph ON l.kind = 'phone' AND ph.seq = l.source_seq
LEFT JOIN no_matches n ON l.kind = 'no_match' AND n.seq = l.source_seq
LEFT JOIN watch_changes c ON l.kind = 'changed' AND c.id = l.source_seq
WHERE r.id IS NOT NULL OR l.kind = 'deleted';


-- What a watch's operations write in the audit log.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN ('results_download', 'feed_read', 'erasure', 'erasure_lifted',
    'retention_purge', 'retention_changed', 'key_created', 'key_revoked', 'budget_changed', 'limits_changed',
    'watch_created', 'watch_changed', 'watch_deleted', 'watch_run', 'watch_changes_read'));

-- +goose Down
-- The audit log is append-only: lines of the watches' actions stay, unchecked.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN ('results_download', 'feed_read', 'erasure', 'erasure_lifted',
    'retention_purge', 'retention_changed', 'key_created', 'key_revoked', 'budget_changed', 'limits_changed')) NOT VALID;

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
DELETE FROM results_feed_log WHERE kind = 'changed';
ALTER TABLE results_feed_log DROP CONSTRAINT results_feed_log_kind_check;
ALTER TABLE results_feed_log ADD CONSTRAINT results_feed_log_kind_check
    CHECK (kind IN ('profile', 'email', 'phone', 'no_match', 'deleted'));
DROP TABLE watch_changes;
DROP TABLE watch_runs;
DROP TABLE watch_inputs;
DROP TABLE watches;

DROP FUNCTION enrichq_reserve(uuid, bigint, integer, text, text, text, bigint, bigint, text, bigint, text);
DROP TABLE vendor_skips;
DROP TABLE vendor_outages;
ALTER TABLE jobs DROP COLUMN vendors;
ALTER TABLE credit_ledger DROP COLUMN vendor;
DROP TABLE vendor_rates;

DROP FUNCTION enrichq_resettle(bigint, bigint, text);
ALTER TABLE credit_ledger DROP COLUMN replay_class, DROP COLUMN witnessed_at;
DROP TABLE vendor_prices;

DROP TABLE leader_leases;
DROP TABLE commit_marks;

ALTER TABLE uploads DROP COLUMN person_hashes;

ALTER TABLE api_keys DROP COLUMN mcp_max_daily_budget;
DROP TABLE mcp_daily_spend;

DROP INDEX jobs_tenant_idempotency_key;
ALTER TABLE jobs DROP CONSTRAINT jobs_idempotency_scoped;
-- Keys of one tenant used by both kinds of request: the older keeps its key.
UPDATE jobs j SET idempotency_key = NULL
    WHERE idempotency_key IS NOT NULL AND EXISTS (SELECT 1 FROM jobs o WHERE o.tenant = j.tenant
        AND o.idempotency_key = j.idempotency_key AND (o.created_at, o.id) < (j.created_at, j.id));
CREATE UNIQUE INDEX jobs_tenant_idempotency_key ON jobs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
ALTER TABLE jobs DROP COLUMN request_sha256, DROP COLUMN idempotency_scope;
