-- Tenants cannot hurt each other: limits and secrets of their own.
--
-- tenants: a default budget for jobs submitted without one, a monthly
-- allowance of credits, and the secret its completion callbacks are signed
-- with (one per tenant, made with the tenant; rotated through the API).
-- tenant_usage: the credits each tenant spent and holds in each calendar
-- month (UTC), kept by triggers on the credit ledger; a reservation that would
-- take a tenant past its allowance fails. jobs: why a paused job is paused
-- and since when, so that each cause has its way back. platform_members: a
-- token refresh is claimed for a while instead of holding the member's row
-- locked across the call to the platform. webhook_deliveries: when the
-- attempt in flight gives up its claim.

-- +goose Up
ALTER TABLE tenants
    ADD COLUMN default_job_budget bigint DEFAULT 10000
        CONSTRAINT tenants_default_job_budget_check CHECK (default_job_budget >= 0), -- credits; NULL: jobs submitted without a budget have none
    ADD COLUMN monthly_allowance  bigint DEFAULT 100000
        CONSTRAINT tenants_monthly_allowance_check CHECK (monthly_allowance >= 0),   -- credits per calendar month (UTC); NULL: no cap
    -- Random for every tenant, existing ones included (a volatile default is drawn per row): 244 bits.
    ADD COLUMN webhook_secret     text NOT NULL
        DEFAULT 'whsec_' || replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''),
    ADD COLUMN webhook_secret_rotated_at timestamptz NOT NULL DEFAULT now();

-- No foreign key to tenants: jobs name their tenant without one either.
CREATE TABLE tenant_usage (
    tenant     text        NOT NULL CHECK (tenant <> ''),
    month      date        NOT NULL, -- first day of the month, UTC: the month the credits were reserved in
    reserved   bigint      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    spent      bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, month)
);
INSERT INTO tenant_usage (tenant, month, reserved, spent)
SELECT j.tenant, date_trunc('month', l.reserved_at AT TIME ZONE 'UTC')::date,
    coalesce(sum(l.reserved) FILTER (WHERE l.status = 'reserved'), 0),
    coalesce(sum(l.charged) FILTER (WHERE l.status <> 'reserved'), 0)
FROM credit_ledger l JOIN jobs j ON j.id = l.job_id
GROUP BY 1, 2;

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

-- Why a paused job is paused, and since when: each cause resumes its own way
-- (docs/money.md, "Paused jobs"). Jobs paused before this migration are
-- classed by their state_reason.
ALTER TABLE jobs
    ADD COLUMN paused_by text CONSTRAINT jobs_paused_by_check
        CHECK (paused_by IN ('job_budget', 'allowance', 'vendor_access', 'platform')),
    ADD COLUMN paused_at timestamptz;
UPDATE jobs SET paused_at = updated_at, paused_by = CASE
        WHEN state_reason LIKE 'budget exhausted%monthly allowance%' THEN 'allowance'
        WHEN state_reason LIKE 'budget exhausted%' THEN 'job_budget'
        WHEN state_reason LIKE 'the vendor refused%' THEN 'vendor_access'
        ELSE 'platform' END
WHERE state = 'paused';
-- The monthly resume's way to the jobs it wakes.
CREATE INDEX jobs_paused_allowance ON jobs (paused_at) WHERE state = 'paused' AND paused_by = 'allowance';

ALTER TABLE platform_members
    ADD COLUMN refresh_claim       uuid,        -- who is refreshing the token now
    ADD COLUMN refresh_claim_until timestamptz; -- and until when the claim holds (a lost refresher's lapses)

ALTER TABLE webhook_deliveries
    ADD COLUMN in_flight_until timestamptz; -- an attempt is being made until then (per-tenant concurrency)

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN in_flight_until;
ALTER TABLE platform_members DROP COLUMN refresh_claim, DROP COLUMN refresh_claim_until;
DROP INDEX jobs_paused_allowance;
ALTER TABLE jobs DROP COLUMN paused_by, DROP COLUMN paused_at;
DROP TRIGGER credit_ledger_tenant_usage_update ON credit_ledger;
DROP TRIGGER credit_ledger_tenant_usage_insert ON credit_ledger;
DROP FUNCTION enrichq_tenant_usage();
DROP TABLE tenant_usage;
ALTER TABLE tenants DROP COLUMN default_job_budget, DROP COLUMN monthly_allowance,
    DROP COLUMN webhook_secret, DROP COLUMN webhook_secret_rotated_at;
