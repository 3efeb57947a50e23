package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// CreateJob of 100,000 rows, the store's share of an upload (no parsing):
//
//	go test -run '^$' -bench CreateJob -benchtime 3x ./internal/store/
func BenchmarkCreateJob(b *testing.B) {
	const rows = 100_000
	st := storetest.New(b)
	ctx := context.Background()
	extra := map[string]string{"crm_owner": "owner-1"}
	b.ResetTimer()
	for range b.N {
		_, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, Roles: []string{"VP Sales"},
			MaxAge: time.Hour, ChunkSize: 100}, func(add func(store.NewRow) error) error {
			for i := range rows {
				if err := add(store.NewRow{InputRow: i + 2, Ref: "crm-" + strconv.Itoa(i), Kind: domain.InputNameCompany, Name: "VP Sales",
					Company: "Acme GmbH " + strconv.Itoa(i), Role: "VP Sales", Extra: extra}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
