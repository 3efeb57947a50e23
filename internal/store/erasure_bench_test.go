package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// growthSizes are the tenant sizes the seek benchmarks run at.
var growthSizes = []int{100_000, 1_000_000}

// grownTenant is tenant acme of rows rows as production plans it: a job the
// statistics have seen (a tenth of the rows), then a fresh one nine times
// its size they have not, finished 40 days ago under a 1,000-day window
// (nothing due); and tenant beta with a small job, whose status is polled.
func grownTenant(b *testing.B, rows int) (*store.Store, storetest.Grown, string) {
	b.Helper()
	st := storetest.New(b)
	ctx := context.Background()
	at := time.Now().Add(-40 * 24 * time.Hour)
	start := time.Now()
	storetest.GrowJob(b, st, "acme", rows/10, at, true)
	fresh := storetest.GrowJob(b, st, "acme", rows-rows/10, at, false)
	polled := storetest.GrowJob(b, st, "beta", 1000, at, false)
	window := 1000 * 24 * time.Hour
	if _, err := st.SetRetention(ctx, "acme", "bench", &window); err != nil {
		b.Fatal(err)
	}
	b.Logf("grew acme to %d rows in %s", rows, time.Since(start).Round(time.Second))
	return st, fresh, polled.ID
}

func sizeName(rows int) string {
	if rows >= 1_000_000 {
		return fmt.Sprintf("rows=%dM", rows/1_000_000)
	}
	return fmt.Sprintf("rows=%dk", rows/1000)
}

// A tenant grown to 100,000 then 1,000,000 rows, each size built once:
// a page of 1,000 results mid-way through the fresh job, a page of 1,000
// feed lines mid-way through its lines, an erasure of one person of the fresh job (named in turn by profile URL,
// name and company, and email), a round of each leader sweep with nothing
// due, then the purge of the tenant's rows (rows/s, and another tenant's
// status polls' p99 meanwhile).
//
//	go test -run '^$' -bench 'TenantGrowth' -benchtime 20x -timeout 60m ./internal/store/
//	go test -run '^$' -bench 'TenantGrowth/rows=100k/erase' -benchtime 20x ./internal/store/
//	go test -run '^$' -bench 'TenantGrowth/rows=1M/(deep|feed)_page' -benchtime 50x -timeout 30m ./internal/store/
func BenchmarkTenantGrowth(b *testing.B) {
	for _, rows := range growthSizes {
		b.Run(sizeName(rows), func(b *testing.B) {
			st, g, polled := grownTenant(b, rows)
			b.Run("deep_page", func(b *testing.B) { benchDeepPage(b, st, g) })
			b.Run("feed_page", func(b *testing.B) { benchFeedPage(b, st, g) })
			b.Run("erase", func(b *testing.B) { benchErase(b, st, g) })
			benchIdleSweeps(b, st)
			benchPurge(b, st, st, polled, nil)
		})
	}
}

// benchErase erases b.N people of job g, one at a time.
func benchErase(b *testing.B, st *store.Store, g storetest.Grown) {
	keys := func(r store.ErasedRow) ([]string, []string) {
		return []string{"url:" + r.ProfileURL, "email:" + r.Email}, []string{"url:" + r.ProfileURL, "email:" + r.Email}
	}
	hash := func(v string) []byte { s := sha256.Sum256([]byte(v)); return s[:] }
	ctx := context.Background()
	for n := range b.N {
		// Rows spread over the job, a new one each time: i%4 picks how the person is named.
		i := (n*7919 + int(time.Now().UnixNano()%997)*4) % g.Rows
		var p store.Person
		switch i % 4 {
		case 0, 1:
			p.ProfileURL = g.URL(i)
		case 2:
			p.Name, p.Company = g.Name(i), g.Company(i)
		default:
			p.Email = g.Email(i)
		}
		e, err := st.Erase(ctx, store.EraseRequest{Tenant: "acme", KeyID: "bench", Keys: keys, Hash: hash, Person: p})
		if err != nil {
			b.Fatalf("erase %+v: %v", p, err)
		}
		if e.Receipt["job_rows"] < 1 {
			b.Logf("erase %+v: already erased (receipt %v)", p, e.Receipt)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/erasure")
}

// benchDeepPage reads pages of 1,000 results of job g (it has not been
// analyzed) from around its middle row, a little further each time, and
// reports their p99.
func benchDeepPage(b *testing.B, st *store.Store, g storetest.Grown) {
	ctx := context.Background()
	first, err := st.ListResults(ctx, g.ID, "", 0, 1)
	if err != nil || len(first) != 1 {
		b.Fatalf("first row: %v %v", first, err)
	}
	var took []time.Duration
	cpu0, ok := backendCPU(st)
	b.ResetTimer()
	for n := range b.N {
		after := first[0].RowID + int64(g.Rows/2+n*1000%(g.Rows/2-1000))
		t0 := time.Now()
		page, err := st.ListResults(ctx, g.ID, "", after, 1000)
		took = append(took, time.Since(t0))
		if err != nil || len(page) != 1000 || page[0].RowID != after+1 {
			b.Fatalf("page after %d: %d rows, %v", after, len(page), err)
		}
	}
	reportP99(b, took, cpu0, ok, st)
}

// benchFeedPage reads pages of 1,000 lines of acme's results feed from
// around the middle of job g's lines, and reports their p99.
func benchFeedPage(b *testing.B, st *store.Store, g storetest.Grown) {
	ctx := context.Background()
	n, err := st.Count(ctx, `SELECT (min(seq) + count(*) / 2)::int FROM results_feed_log WHERE job_id = $1`, g.ID)
	if err != nil {
		b.Fatal(err)
	}
	mid := int64(n)
	var took []time.Duration
	cpu0, ok := backendCPU(st)
	b.ResetTimer()
	for i := range b.N {
		since := mid + int64(i*1000%(g.Rows/2-1000))
		t0 := time.Now()
		page, err := st.ResultsFeed(ctx, "acme", since, 1000)
		took = append(took, time.Since(t0))
		if err != nil || len(page) != 1000 || page[0].Seq != since+1 {
			b.Fatalf("feed after %d: %d lines, %v", since, len(page), err)
		}
	}
	reportP99(b, took, cpu0, ok, st)
}

// reportP99 reports the p99 (and the median) of took, in ms, and with
// cpuOK the CPU time st's backends took a page since cpu0 (backendCPU).
func reportP99(b *testing.B, took []time.Duration, cpu0 map[uint32]time.Duration, cpuOK bool, st *store.Store) {
	if cpu1, ok := backendCPU(st); ok && cpuOK {
		var d time.Duration
		for pid, t := range cpu1 {
			d += t - cpu0[pid]
		}
		b.ReportMetric(float64(d.Microseconds())/1000/float64(len(took)), "pg-cpu-ms/page")
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}
