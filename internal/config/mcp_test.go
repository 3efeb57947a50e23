package config

import (
	"slices"
	"strings"
	"testing"
)

// The MCP variables: the daily ceiling (absent: nil, the 5x default) and
// the allowed origins, normalised as browsers send them; bad values named.
func TestMCPVariables(t *testing.T) {
	t.Parallel()
	a, err := APIFromEnv(env(nil))
	if err != nil || a.MCPMaxDailyBudget != nil || a.MCPAllowedOrigins != nil || a.MCPMaxBudget != DefaultMCPMaxBudget {
		t.Fatalf("defaults: %+v, %v", a, err)
	}
	a, err = APIFromEnv(env(map[string]string{"ENRICHQ_MCP_MAX_DAILY_BUDGET": "0",
		"ENRICHQ_MCP_ALLOWED_ORIGINS": "https://Assistant.example.com/, http://127.0.0.1:3000"}))
	if err != nil || a.MCPMaxDailyBudget == nil || *a.MCPMaxDailyBudget != 0 ||
		!slices.Equal(a.MCPAllowedOrigins, []string{"https://assistant.example.com", "http://127.0.0.1:3000"}) {
		t.Fatalf("set: %+v, %v", a, err)
	}
	_, err = APIFromEnv(env(map[string]string{"ENRICHQ_MCP_MAX_DAILY_BUDGET": "-1", "ENRICHQ_MCP_ALLOWED_ORIGINS": "https://a.example/path"}))
	for _, want := range []string{"ENRICHQ_MCP_MAX_DAILY_BUDGET=-1", `ENRICHQ_MCP_ALLOWED_ORIGINS="https://a.example/path"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
}
