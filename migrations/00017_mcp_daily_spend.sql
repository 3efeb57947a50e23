-- The budgets an AI assistant committed through MCP, per API key and UTC
-- day (docs/mcp.md, "The daily ceiling"): a job's budget at submit_job, the
-- increase of a raise_budget. The per-job ceiling (00011) bounds one call;
-- this bounds the day's sum, so that four submits at the ceiling do not
-- commit four times it. One row per key and day, grown in the statement
-- that checks it against the ceiling (store.CommitMCPSpend), so that two
-- concurrent submits cannot both pass.
--
-- key_id is the principal's KeyID: a stored key's id, or "env:" and a digest
-- prefix for a key of ENRICHQ_API_KEYS (which has no api_keys row), hence
-- no foreign key.

-- +goose Up
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

-- +goose Down
ALTER TABLE api_keys DROP COLUMN mcp_max_daily_budget;
DROP TABLE mcp_daily_spend;
