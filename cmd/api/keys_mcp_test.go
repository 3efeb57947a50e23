package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// `api keys create --mcp-max-budget N` stores the key's MCP budget ceiling;
// list shows it, or "default" (ENRICHQ_MCP_MAX_BUDGET) for a key without.
func TestKeysMCPMaxBudget(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.NewDatabase(t), "REDIS_URL": redisURL()}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	var errOut bytes.Buffer
	if err := run(ctx, []string{"api", "keys", "create", "--tenant", "beta", "--name", "assistant", "--mcp-max-budget", "250"}, getenv, io.Discard, &errOut); err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.Contains(errOut.String(), "an MCP budget ceiling of 250 credits") {
		t.Fatalf("create says %q", errOut.String())
	}
	if err := run(ctx, []string{"api", "keys", "create", "--tenant", "beta", "--name", "plain"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"api", "keys", "create", "--tenant", "beta", "--mcp-max-budget", "-5"}, getenv, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--mcp-max-budget -5") {
		t.Fatalf("a negative ceiling: %v", err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"api", "keys", "list", "--tenant", "beta"}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "MCP MAX BUDGET") || !strings.Contains(lines[1], " default ") || !strings.Contains(lines[2], " 250 ") {
		t.Fatalf("list (newest first: plain, then assistant):\n%s", out.String())
	}
}
