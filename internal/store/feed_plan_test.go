package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// feedKeys are what the index condition on each table a feed page joins
// must hold: the line's own keys (its row, the row's extras, its result or
// change by seq).
var feedKeys = map[string][]string{
	"job_rows":         {"id = "},
	"job_input_extras": {"job_id = ", "input_row = "},
	"profile_results":  {"seq = "},
	"email_results":    {"seq = "},
	"phone_results":    {"seq = "},
	"no_matches":       {"seq = "},
	"watch_changes":    {"id = "},
}

// A page of the results feed reaches each line's row, extras, result and
// change by a probe of the line's own keys, in the feed's order, whatever
// the statistics say: planned custom and generic for the lines of a fresh
// job (never analyzed) ten times the size of the analyzed one beside it, no
// plan hashes a table, sorts the lines after the position, or reads a job's
// extras by job alone (the feed page's p99 grew 11× with a tenant's size).
func TestResultsFeedSeeksEveryLine(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	at := time.Now().Add(-time.Hour)
	storetest.GrowJob(t, st, "acme", 1000, at, true)
	fresh := storetest.GrowJob(t, st, "acme", 10_000, at, false)
	if _, err := pool.Exec(ctx, `INSERT INTO watches (tenant, source_job, lookups, every_seconds, monthly_cap_credits, day_offset_seconds, next_run_at, created_at, updated_at)
			VALUES ('acme', $1, '{profile}', 604800, 0, 0, now(), now(), now())`, fresh.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO watch_changes (tenant, watch_id, n, field, kind, job_id, row_id, at)
			SELECT w.tenant, w.id, i, 'company', 'changed', $1, i, now() FROM watches w, generate_series(1, 2000) i`, fresh.ID); err != nil {
		t.Fatal(err)
	}
	var mid int64
	if err := pool.QueryRow(ctx, `SELECT min(seq) + 5000 FROM results_feed_log WHERE job_id = $1`, fresh.ID).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "PREPARE feed_page AS "+store.ResultsFeedSQL); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		var plan []byte
		if err := conn.QueryRow(ctx, fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE feed_page('acme', %d, 1000)", mid)).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		var doc []struct{ Plan seekNode }
		if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
			t.Fatalf("plan %s: %v", plan, err)
		}
		bad := doc[0].Plan.unkeyedBy(feedKeys, true)
		for _, n := range doc[0].Plan.nodes() {
			if n.NodeType == "Sort" || n.NodeType == "Hash" || n.NodeType == "Materialize" {
				bad = append(bad, "a "+n.NodeType+" node: the page's lines are not read in the feed's order, one probe each")
			}
		}
		for _, b := range bad {
			t.Errorf("feed page (%s): %s\n%s", mode, b, plan)
		}
	}
	// And the page reads the lines in order, with their rows' extras.
	items, err := st.ResultsFeed(ctx, "acme", mid, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1000 || items[0].Seq != mid+1 {
		t.Fatalf("page after %d: %d lines, first %+v", mid, len(items), items[0])
	}
	for _, it := range items {
		if it.JobID == fresh.ID && it.Extra["crm_id"] != fmt.Sprint(it.InputRow-2) {
			t.Fatalf("line %d (input row %d): extra %v", it.Seq, it.InputRow, it.Extra)
		}
	}
}

// nodes lists n and every node under it.
func (n seekNode) nodes() []seekNode {
	out := []seekNode{n}
	for _, c := range n.Plans {
		out = append(out, c.nodes()...)
	}
	return out
}

// The feed's advance reads the result tables from the last horizon, a
// range costed without fresh statistics at a third of each table: with JIT
// it compiled for 0.1 to 2.5 s on every call (every feed page advances
// first), one with nothing to log included. It runs with jit off, and keeps
// its work_mem.
func TestFeedAdvanceRunsWithoutJIT(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	var config []string
	if err := store.PoolForTest(st).QueryRow(context.Background(),
		`SELECT proconfig FROM pg_proc WHERE proname = 'results_feed_advance'`).Scan(&config); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"jit=off", "work_mem=64MB"} {
		if !slices.Contains(config, want) {
			t.Errorf("results_feed_advance() is set %v, want %s among them", config, want)
		}
	}
}

// A tenant grown since the last ANALYZE (or never analyzed, as a new
// deployment's tables until autovacuum's first pass) has its lines taken
// for a few hundred: a page was planned as every line after the position
// read unordered, each joined, then sorted to keep the page (308,730 lines
// for a page of 1,000 at 100,000 rows). A page walks the tenant's lines in
// the feed's order and reads no more than it returns.
func TestResultsFeedPageReadsItsOwnLinesWithoutStatistics(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour)
	storetest.GrowJob(t, st, "beta", 5000, at, false)
	storetest.GrowJob(t, st, "acme", 200, at, false)
	fresh := storetest.GrowJob(t, st, "acme", 20_000, at, false)
	var mid int64
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT min(seq) + 5000 FROM results_feed_log WHERE job_id = $1`, fresh.ID).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	for _, since := range []int64{0, mid} {
		plan, err := st.ExplainFeedPage(ctx, "acme", since, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var doc []struct{ Plan readNode }
		if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
			t.Fatalf("plan %s: %v", plan, err)
		}
		for _, n := range doc[0].Plan.all() {
			if n.NodeType == "Sort" {
				t.Errorf("page after %d: a Sort node (the lines are not read in the feed's order):\n%s", since, plan)
			}
			if n.Relation == "results_feed_log" && n.ActualRows > 1000 {
				t.Errorf("page after %d: %s read %d lines of results_feed_log for a page of 1,000:\n%s", since, n.NodeType, n.ActualRows, plan)
			}
		}
	}
}

type readNode struct {
	NodeType   string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	ActualRows int64      `json:"Actual Rows"`
	Plans      []readNode `json:"Plans"`
}

// all lists n and every node under it.
func (n readNode) all() []readNode {
	out := []readNode{n}
	for _, c := range n.Plans {
		out = append(out, c.all()...)
	}
	return out
}
