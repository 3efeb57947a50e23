package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
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
// an erasure of one person of the fresh job (named in turn by profile URL,
// name and company, and email), a round of each leader sweep with nothing
// due, then the purge of the tenant's rows (rows/s, and another tenant's
// status polls' p99 meanwhile).
//
//	go test -run '^$' -bench 'TenantGrowth' -benchtime 20x -timeout 60m ./internal/store/
//	go test -run '^$' -bench 'TenantGrowth/rows=100k/erase' -benchtime 20x ./internal/store/
func BenchmarkTenantGrowth(b *testing.B) {
	for _, rows := range growthSizes {
		b.Run(sizeName(rows), func(b *testing.B) {
			st, g, polled := grownTenant(b, rows)
			b.Run("erase", func(b *testing.B) { benchErase(b, st, g) })
			benchIdleSweeps(b, st)
			benchPurge(b, st, polled)
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
