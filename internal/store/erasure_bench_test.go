package store_test

import (
	"context"
	"crypto/sha256"
	"strconv"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// An erasure in a tenant of 100,000 rows: the rows are read without an
// index on the inputs, so its time grows with the tenant's rows.
//
//	go test -run '^$' -bench Erase -benchtime 5x ./internal/store/
func BenchmarkErase(b *testing.B) {
	const rows = 100_000
	st := storetest.New(b)
	ctx := context.Background()
	_, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 100},
		func(add func(store.NewRow) error) error {
			for i := range rows {
				if err := add(store.NewRow{InputRow: i + 2, Ref: strconv.Itoa(i), Kind: domain.InputProfileURL,
					ProfileURL: "https://platform.example/in/p-" + strconv.Itoa(i)}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		b.Fatal(err)
	}
	keys := func(r store.ErasedRow) ([]string, []string) {
		return []string{"url:" + r.ProfileURL}, []string{"url:" + r.ProfileURL}
	}
	hash := func(v string) []byte { s := sha256.Sum256([]byte(v)); return s[:] }
	b.ResetTimer()
	for i := range b.N {
		e, err := st.Erase(ctx, store.EraseRequest{Tenant: "acme", KeyID: "bench", Keys: keys, Hash: hash,
			Person: store.Person{ProfileURL: "https://platform.example/in/p-" + strconv.Itoa(i*997)}})
		if err != nil || e.Receipt["job_rows"] != 1 {
			b.Fatalf("erase: %v, receipt %v", err, e.Receipt)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/erasure")
}
