-- A key's ceiling on the budget of a job an AI assistant submits or raises
-- through MCP (docs/mcp.md). NULL: the operator's default
-- (ENRICHQ_MCP_MAX_BUDGET) applies. It is kept with the key because the
-- operator decides it when handing the key to an assistant.

-- +goose Up
ALTER TABLE api_keys
    ADD COLUMN mcp_max_budget bigint CONSTRAINT api_keys_mcp_max_budget_check CHECK (mcp_max_budget >= 0);

-- +goose Down
ALTER TABLE api_keys DROP COLUMN mcp_max_budget;
