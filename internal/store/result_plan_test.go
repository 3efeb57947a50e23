package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A job that has just finished has no statistics of its own: the planner
// took its rows for one and joined its extras by job_id alone, reading
// every extra of the job for every row (a 100,000-row download took 410 s),
// and merged a result table's row_id index from its first entry. Every
// plan of the statements that read a job's results must reach each joined
// table through an index by the row's own keys (extras by job and input
// row, results and markers by row id), planned for a fresh job ten times
// the size of each analyzed one, custom and generic alike.
func TestResultStatementsSeekEveryRow(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	for range 20 {
		job := createJob(t, st, store.NewJob{ChunkSize: 100}, 150)
		addResults(t, pool, job.ID)
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	fresh := createJob(t, st, store.NewJob{ChunkSize: 100}, 1500)
	addResults(t, pool, fresh.ID)

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	names := make([]string, 0, len(store.ResultStatements))
	for name := range store.ResultStatements {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for i, name := range names {
			stmt := fmt.Sprintf("results_%d", i)
			if _, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+store.ResultStatements[name]); err != nil {
				t.Fatalf("%s: prepare: %v", name, err)
			}
			args := fmt.Sprintf("'%s', 0, '%s'", fresh.ID, domain.RowMatched)
			switch {
			case strings.Contains(name, "keys"):
				args = fmt.Sprintf("'%s', '%s', 256", fresh.ID, domain.RowMatched)
			case strings.Contains(name, "page"):
				args += ", 1001"
			}
			var plan []byte
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+stmt+"("+args+")").Scan(&plan); err != nil {
				t.Fatalf("%s: explain: %v", name, err)
			}
			if _, err := conn.Exec(ctx, "DEALLOCATE "+stmt); err != nil {
				t.Fatal(err)
			}
			var doc []struct{ Plan seekNode }
			if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
				t.Fatalf("%s: plan %s: %v", name, plan, err)
			}
			for _, bad := range doc[0].Plan.unkeyed(strings.Contains(store.ResultStatements[name], "FROM job_rows")) {
				t.Errorf("%s (%s): %s\n%s", name, mode, bad, plan)
			}
		}
	}
}

// addResults gives every row of a job a profile, every second an email,
// every third phones and every fifth a no-match marker.
func addResults(t *testing.T, pool *pgxpool.Pool, jobID string) {
	t.Helper()
	for _, sql := range []string{
		`UPDATE job_rows SET state = 'matched', profile_url = 'https://platform.example/in/p' || input_row WHERE job_id = $1`,
		`INSERT INTO profile_results (job_id, row_id, profile_url, name, raw, fetched_at)
			SELECT job_id, id, profile_url, 'P ' || input_row, '{}', now() FROM job_rows WHERE job_id = $1`,
		`INSERT INTO email_results (job_id, row_id, profile_url, email, raw, fetched_at)
			SELECT job_id, id, profile_url, 'p' || input_row || '@x.example', '{}', now() FROM job_rows WHERE job_id = $1 AND input_row % 2 = 0`,
		`INSERT INTO phone_results (job_id, row_id, profile_url, phones, raw, fetched_at)
			SELECT job_id, id, profile_url, '[]', '{}', now() FROM job_rows WHERE job_id = $1 AND input_row % 3 = 0`,
		`INSERT INTO no_matches (job_id, row_id, stage, checked_at)
			SELECT job_id, id, 'phone', now() FROM job_rows WHERE job_id = $1 AND input_row % 5 = 0`,
	} {
		if _, err := pool.Exec(context.Background(), sql, jobID); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

type seekNode struct {
	NodeType   string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	IndexCond  string     `json:"Index Cond"`
	Recheck    string     `json:"Recheck Cond"`
	JoinFilter string     `json:"Join Filter"`
	Plans      []seekNode `json:"Plans"`
}

// rowKeys are what an index condition on each table must hold: the row's
// own keys, compared with the row at hand (or the job, for its rows).
var rowKeys = map[string][]string{
	"job_rows":         {"job_id = "},
	"job_input_extras": {"job_id = ", "input_row = "},
	"profile_results":  {"row_id = "},
	"email_results":    {"row_id = "},
	"phone_results":    {"row_id = "},
	"no_matches":       {"row_id = "},
}

// unkeyed lists the scans of the plan that do not seek by the row's keys,
// and the joins that filter rows after reading them. Without job_rows (a
// job's extras read alone) the job is key enough.
func (n seekNode) unkeyed(joined bool) []string { return n.unkeyedBy(rowKeys, joined) }

// unkeyedBy is unkeyed with the keys each table's index condition must hold.
func (n seekNode) unkeyedBy(rowKeys map[string][]string, joined bool) []string {
	var out []string
	if keys, ok := rowKeys[n.Relation]; ok {
		if !joined {
			keys = keys[:1]
		}
		switch {
		case n.NodeType != "Index Scan" && n.NodeType != "Index Only Scan" && n.NodeType != "Bitmap Heap Scan":
			out = append(out, fmt.Sprintf("%s read by %s", n.Relation, n.NodeType))
		default:
			cond := n.IndexCond + n.Recheck // a bitmap scan's index condition is its recheck
			for _, k := range keys {
				if !strings.Contains(cond, k) {
					out = append(out, fmt.Sprintf("%s's index condition %q lacks %q", n.Relation, cond, k))
				}
			}
		}
	}
	if n.JoinFilter != "" {
		out = append(out, fmt.Sprintf("a %s filters joined rows after reading them: %s", n.NodeType, n.JoinFilter))
	}
	for _, c := range n.Plans {
		out = append(out, c.unkeyedBy(rowKeys, joined)...)
	}
	return out
}
