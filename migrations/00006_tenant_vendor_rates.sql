-- What each tenant's rows taught the learned vendor order (issue 36, issue
-- 34 item 4): a tenant's own counts order that tenant's rows, so another
-- tenant's rows (junk included) move them only through the pooled rates
-- (vendor_rates, still added to by every worker), by a bounded amount
-- (docs/vendors.md, "Per tenant"). The stage is any stage a vendor answers.

-- +goose Up
CREATE TABLE tenant_vendor_rates (
    tenant     text        NOT NULL CONSTRAINT tenant_vendor_rates_tenant_check CHECK (tenant <> ''),
    vendor     text        NOT NULL CONSTRAINT tenant_vendor_rates_vendor_check CHECK (vendor <> ''),
    segment    text        NOT NULL CONSTRAINT tenant_vendor_rates_segment_check CHECK (segment LIKE '%/%'),
    stage      text        NOT NULL CONSTRAINT tenant_vendor_rates_stage_check CHECK (stage <> ''),
    asked      bigint      NOT NULL DEFAULT 0 CONSTRAINT tenant_vendor_rates_asked_check CHECK (asked >= 0),
    found      bigint      NOT NULL DEFAULT 0 CONSTRAINT tenant_vendor_rates_found_check CHECK (found >= 0 AND found <= asked),
    credits    bigint      NOT NULL DEFAULT 0 CONSTRAINT tenant_vendor_rates_credits_check CHECK (credits >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, vendor, segment, stage)
);

-- +goose Down
DROP TABLE tenant_vendor_rates;
