package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A worker's connection keeps a statement's generic plan after its fifth
// run, planned on whatever the statistics said then: on a young database,
// or with autovacuum behind, nothing. A plan that reads a whole table to
// find a chunk's rows costs more with every row the table holds (live rows
// of other jobs and workers, dead rows not yet vacuumed): the chunk's save
// once hashed all of lookup_claims, 100,000 dead rows by the end of a
// 100,000-row job, to give up its own hundred claims. So every per-chunk
// statement must reach its rows through an index, planned without
// statistics and with a table that already has some pages.
func TestHotStatementsReadNoTableWhole(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	conn, err := store.PoolForTest(st).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Tables with pages and without statistics, as a running job leaves
	// them: rows to work on, answers cached, claims given up.
	createJob(t, st, store.NewJob{ChunkSize: 100}, 5000)
	if _, err := conn.Exec(ctx, `INSERT INTO lookup_cache (tenant, stage, input_key, matched, fetched_at)
		SELECT 't', 'profile', 'k' || i, false, now() FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lookup_claims (tenant, stage, input_key, token, expires_at)
		SELECT 't', 'profile', 'k' || i, gen_random_uuid(), now() FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM lookup_claims`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(store.HotStatements))
	for name := range store.HotStatements {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		stmt := fmt.Sprintf("hot_%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+store.HotStatements[name]); err != nil {
			t.Fatalf("%s: prepare: %v", name, err)
		}
		var params int
		if err := conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = $1`,
			stmt).Scan(&params); err != nil {
			t.Fatal(err)
		}
		// Without ANALYZE nothing runs: NULL stands for every parameter.
		args := strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+stmt+"("+args+")").Scan(&plan); err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		var doc []struct{ Plan planNode }
		if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
			t.Fatalf("%s: plan %s: %v", name, plan, err)
		}
		for _, scan := range doc[0].Plan.seqScans() {
			t.Errorf("%s reads all of %s (Seq Scan) in its generic plan:\n%s", name, scan, plan)
		}
	}
}

type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Plans    []planNode `json:"Plans"`
}

// seqScans lists the tables the plan reads whole.
func (n planNode) seqScans() []string {
	var out []string
	if n.NodeType == "Seq Scan" {
		out = append(out, n.Relation)
	}
	for _, c := range n.Plans {
		out = append(out, c.seqScans()...)
	}
	return out
}
