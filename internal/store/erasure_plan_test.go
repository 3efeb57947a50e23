package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A person a vendor gives hundreds of rows (one email found for many
// inputs) is erased with arrays of hundreds of values. Planned for those
// values on a fresh job the statistics have not seen, each "= ANY(array)"
// was costed at more than its table, and the erasure read job_rows,
// profile_results, the person's jobs' feed lines, the no-match markers and
// the tenant's claims whole (3 s at 1,000,000 rows through the pipeline).
// Each statement that takes such an array must reach its rows by a probe
// per value, whatever the array's length.
func TestErasureStatementsSeekForAPersonOfManyRows(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	old := time.Now().Add(-90 * 24 * time.Hour)
	// A deployment's other jobs.
	if _, err := pool.Exec(ctx, `INSERT INTO jobs (tenant, lookups, state, finished_at, purged_at)
		SELECT 'other' || i % 50, '{profile}', 'completed', now(), now() FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	storetest.GrowJob(t, st, "acme", 1000, old, true)
	fresh := storetest.GrowJob(t, st, "acme", 20_000, old, false)
	// Claims given up leave their entries behind until vacuum (workers claim every lookup).
	for _, q := range []string{
		`INSERT INTO lookup_claims (tenant, stage, input_key, token, expires_at)
			SELECT 'acme', s, 'k:' || i, gen_random_uuid(), now() FROM generate_series(1, 20000) i, unnest('{profile,email}'::text[]) s`,
		`DELETE FROM lookup_claims`,
		`INSERT INTO lookup_claims (tenant, stage, input_key, token, expires_at)
			SELECT 'acme', 'profile', 'k:' || i, gen_random_uuid(), now() FROM generate_series(1, 1000) i`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const n = 500
	var ids, ledger []int64
	var urls, emails, keys []string
	for _, q := range []struct {
		sql  string
		dest any
	}{
		{`SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM job_rows WHERE job_id = $1 ORDER BY id LIMIT $2) r`, &ids},
		{`SELECT array_agg(DISTINCT r.found_profile_url) FROM (SELECT found_profile_url FROM job_rows
			WHERE job_id = $1 AND found_profile_url IS NOT NULL ORDER BY id LIMIT $2) r`, &urls},
		{`SELECT array_agg(e.email) FROM (SELECT email FROM email_results WHERE job_id = $1 ORDER BY row_id LIMIT $2) e`, &emails},
		{`SELECT array_agg(k.input_key) FROM (SELECT input_key FROM lookup_cache WHERE tenant = 'acme' AND $1::uuid IS NOT NULL
			ORDER BY input_key LIMIT $2) k`, &keys},
		{`SELECT array_agg(l.id) FROM (SELECT l.id FROM credit_ledger l WHERE l.job_id = $1 ORDER BY l.id LIMIT $2) l`, &ledger},
	} {
		if err := pool.QueryRow(ctx, q.sql, fresh.ID, n).Scan(q.dest); err != nil {
			t.Fatal(err)
		}
	}
	hashed := make([]string, len(ledger))
	for i := range hashed {
		hashed[i] = "erased-x"
	}
	args := map[string][]any{
		"rows of found":           {urls, emails, ids[:1], "acme"},
		"withdraw feed lines":     {"acme", ids},
		"delete profile results":  {ids},
		"delete email results":    {ids},
		"delete phone results":    {ids},
		"delete no-match markers": {ids},
		"delete cache keys":       {"acme", keys},
		"delete claim keys":       {"acme", keys},
		"rewrite ledger keys":     {ledger, hashed},
		"bulk lines of chunks":    {ids},
	}
	names := make([]string, 0, len(store.ErasureArrayStatements))
	for name := range store.ErasureArrayStatements {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := store.ErasureArrayStatements[name]
		a, ok := args[name]
		if !ok {
			t.Fatalf("%s: no arguments in this test", name)
		}
		// Planned for these values (the unnamed statement): a custom plan.
		var plan []byte
		if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+s.SQL, a...).Scan(&plan); err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		var doc []struct{ Plan scanNode }
		if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
			t.Fatalf("%s: plan %s: %v", name, plan, err)
		}
		var indexes []string
		for _, sc := range doc[0].Plan.scans() {
			switch {
			case sc.NodeType == "Seq Scan":
				t.Errorf("%s reads all of %s (Seq Scan) for %d values:\n%s", name, sc.Relation, n, plan)
			case sc.Index != "":
				indexes = append(indexes, sc.Index)
			}
		}
		for _, want := range s.Indexes {
			if !slices.Contains(indexes, want) {
				t.Errorf("%s does not use %s (uses %v) for %d values:\n%s", name, want, indexes, n, plan)
			}
		}
	}
}
