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
//
// The first run of a sub-benchmark grows it (so that -bench can pick one
// size); it lives until the benchmark's end.
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

// An erasure of one person of the fresh job, named in turn by profile URL,
// name and company, and email, in a tenant of 100,000 then 1,000,000 rows.
//
//	go test -run '^$' -bench Erase -benchtime 20x ./internal/store/
func BenchmarkErase(b *testing.B) {
	keys := func(r store.ErasedRow) ([]string, []string) {
		return []string{"url:" + r.ProfileURL, "email:" + r.Email}, []string{"url:" + r.ProfileURL, "email:" + r.Email}
	}
	hash := func(v string) []byte { s := sha256.Sum256([]byte(v)); return s[:] }
	outer := b // the data lives until the benchmark's end
	for _, rows := range growthSizes {
		var st *store.Store
		var g storetest.Grown
		ctx := context.Background()
		next := 0
		b.Run(sizeName(rows), func(b *testing.B) {
			if st == nil {
				st, g, _ = grownTenant(outer, rows)
				b.ResetTimer()
			}
			for range b.N {
				// Rows spread over the job: i%4 picks how the person is named.
				i := (next*7919 + 13) % g.Rows
				next++
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
				if err != nil || e.Receipt["job_rows"] < 1 {
					b.Fatalf("erase %+v: %v, receipt %v", p, err, e.Receipt)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/erasure")
		})
	}
}
