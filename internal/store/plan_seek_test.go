package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// An erasure's and the retention sweeps' statements reach their rows
// through an index that starts at what they remove (the person's values,
// the rows' ids and keys) or at what is due (the oldest entries of each
// tenant with a window), never by reading a table whole: their cost follows
// the person's rows or what is due, not what the deployment holds. Planned
// generically (as a connection's statement cache does after five runs) on
// a fresh job the statistics have not seen, ten times the rows of the
// analyzed one beside it.
func TestSeekStatementsReachTheirRowsByIndex(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	old := time.Now().Add(-90 * 24 * time.Hour)
	conn, err := store.PoolForTest(st).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// A deployment's other jobs, and claims given up (as the hot statements' test).
	for _, q := range []string{
		`INSERT INTO jobs (tenant, lookups, state, finished_at, purged_at) SELECT 'other' || i % 50, '{profile}', 'completed', now(), now()
			FROM generate_series(1, 5000) i`,
		`INSERT INTO job_chunk_counts (job_id, chunk) SELECT j.id, c FROM jobs j, generate_series(0, 9) c`,
		`INSERT INTO job_chunks (job_id, chunk, enqueued_at) SELECT j.id, c, now() FROM jobs j, generate_series(0, 9) c`,
		`INSERT INTO platform_sync_chunks (job_id, chunk, enqueued_at) SELECT j.id, c, now() FROM jobs j, generate_series(0, 9) c`,
		`INSERT INTO watches (tenant, source_job, lookups, every_seconds, monthly_cap_credits, day_offset_seconds, next_run_at, created_at, updated_at)
			SELECT 'other' || i, gen_random_uuid(), '{profile}', 604800, 0, 0, now(), now(), now() FROM generate_series(1, 50) i`,
		`INSERT INTO watch_changes (tenant, watch_id, n, field, kind, job_id, row_id, at)
			SELECT w.tenant, w.id, i, 'company', 'changed', gen_random_uuid(), i, now() FROM watches w, generate_series(1, 200) i`,
		`INSERT INTO watch_inputs (watch_id, n, input_kind, profile_url, name, company, domain, email, found_profile_url, snap_email)
			SELECT w.id, i, (ARRAY['profile_url', 'email', 'name_company', 'name_domain'])[i % 4 + 1],
				'https://platform.example/in/w' || i, 'person ' || i, 'company ' || i, 'd' || i || '.example',
				'w' || i || '@example.com', 'https://platform.example/in/w' || i, 'w' || i || '@example.com'
			FROM watches w, generate_series(1, 200) i`,
		`INSERT INTO watch_runs (watch_id, job_id, slot, month, budget, created_at)
			SELECT w.id, gen_random_uuid(), now() - i * interval '1 day', date_trunc('month', now()), 0, now() FROM watches w, generate_series(1, 100) i`,
		`INSERT INTO watches (tenant, source_job, lookups, every_seconds, monthly_cap_credits, day_offset_seconds, next_run_at, created_at, updated_at)
			SELECT 'many' || i, gen_random_uuid(), '{profile}', 604800, 0, 0, now(), now(), now() FROM generate_series(1, 3000) i`,
		`INSERT INTO platform_members (tenant, member_id, name, email, token, token_issued_at, connected_at, profile)
			SELECT 'acme', 'm' || i, 'member ' || i, 'm' || i || '@example.com', '\x00', now(), now(),
				jsonb_build_object('profile_url', 'https://platform.example/in/m' || i, 'url', 'https://platform.example/in/m' || i)
			FROM generate_series(1, 5000) i`,
		`INSERT INTO lookup_claims (tenant, stage, input_key, token, expires_at)
			SELECT 't', 'profile', 'k' || i, gen_random_uuid(), now() FROM generate_series(1, 5000) i`,
		`DELETE FROM lookup_claims`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	storetest.GrowJob(t, st, "acme", 1000, old, true)
	storetest.GrowJob(t, st, "acme", 10_000, old, false)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(store.SeekStatements))
	for name := range store.SeekStatements {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		s := store.SeekStatements[name]
		stmt := fmt.Sprintf("seek_%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+s.SQL); err != nil {
			t.Fatalf("%s: prepare: %v", name, err)
		}
		var params int
		if err := conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = $1`,
			stmt).Scan(&params); err != nil {
			t.Fatal(err)
		}
		args := ""
		if params > 0 {
			args = "(" + strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ") + ")"
		}
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+stmt+args).Scan(&plan); err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		var doc []struct{ Plan scanNode }
		if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
			t.Fatalf("%s: plan %s: %v", name, plan, err)
		}
		var indexes []string
		for _, n := range doc[0].Plan.scans() {
			switch {
			case n.NodeType == "Seq Scan" && n.Relation != "tenants":
				// tenants: a row per tenant, read to find those with a window.
				t.Errorf("%s reads all of %s (Seq Scan):\n%s", name, n.Relation, plan)
			case n.Index != "":
				indexes = append(indexes, n.Index)
			}
		}
		for _, want := range s.Indexes {
			if !slices.Contains(indexes, want) {
				t.Errorf("%s does not use %s (uses %v):\n%s", name, want, indexes, plan)
			}
		}
	}
}

type scanNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []scanNode `json:"Plans"`
}

// scans lists the plan's nodes that read a table or an index.
func (n scanNode) scans() []scanNode {
	var out []scanNode
	if n.Relation != "" || n.Index != "" {
		out = append(out, n)
	}
	for _, c := range n.Plans {
		out = append(out, c.scans()...)
	}
	return out
}
