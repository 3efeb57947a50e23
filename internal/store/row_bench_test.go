package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The persistence path of one chunk, as the worker runs it: claim the
// chunk's rows, then save their outcomes (a profile and an email for 80 % of
// rows, no-match markers for the rest) with their cache entries.
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/store/
func BenchmarkClaimAndSaveChunk(b *testing.B) {
	for _, size := range []int{100, 500} {
		b.Run(fmt.Sprintf("chunk=%d", size), func(b *testing.B) {
			st := storetest.New(b)
			ctx := context.Background()
			chunks := b.N
			job := benchJob(b, st, chunks*size, size)
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for c := range chunks {
				claim, err := st.ClaimChunk(ctx, job.ID, c, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				outs, cache := benchOutcomes(claim, now)
				if ids, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, cache); err != nil || len(ids) != len(outs) {
					b.Fatalf("save: %d of %d, %v", len(ids), len(outs), err)
				}
			}
			b.ReportMetric(float64(chunks*size)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// RowCounts of a 100,000-row job half done: what every status poll costs,
// from the per-chunk counts, and (count_rows) as it was counted before them.
func BenchmarkRowCounts(b *testing.B) {
	st := storetest.New(b)
	ctx := context.Background()
	const rows, size = 100_000, 100
	job := benchJob(b, st, rows, size)
	now := time.Now()
	for c := range rows / size / 2 {
		claim, err := st.ClaimChunk(ctx, job.ID, c, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		outs, cache := benchOutcomes(claim, now)
		if _, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, cache); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := store.PoolForTest(st).Exec(ctx, `VACUUM ANALYZE job_rows`); err != nil {
		b.Fatal(err)
	}
	b.Run("chunk_counts", func(b *testing.B) {
		for b.Loop() {
			counts, err := st.RowCounts(ctx, job.ID)
			if err != nil || counts[domain.RowPending] != rows/2 {
				b.Fatalf("counts %v, %v", counts, err)
			}
		}
	})
	b.Run("count_rows", func(b *testing.B) {
		for b.Loop() {
			r, err := store.PoolForTest(st).Query(ctx, `SELECT state, count(*) FROM job_rows WHERE job_id = $1 GROUP BY state`, job.ID)
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
}

func benchJob(b *testing.B, st *store.Store, rows, chunkSize int) store.Job {
	b.Helper()
	job, _, err := st.CreateJob(context.Background(), store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, MaxAge: time.Hour,
		ChunkSize: chunkSize}, func(add func(store.NewRow) error) error {
		for i := range rows {
			if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany, Name: "VP Sales",
				Company: fmt.Sprint("Company ", i), Role: "VP Sales", Extra: map[string]string{"owner": "kim"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return job
}

func benchOutcomes(claim store.Claim, now time.Time) ([]store.Outcome, []store.CacheEntry) {
	raw := []byte(`{"profile_url":"https://platform.example/in/jane-doe-a1b2c3","name":"Jane Doe","headline":"VP Sales at Company",` +
		`"company":"Company","role":"VP Sales","location":"Berlin, DE","company_size":"51-200","industry":"Software",` +
		`"technographics":["Salesforce","AWS"],"vendor_score":0.93,"last_verified":"2026-10-01"}`)
	outs := make([]store.Outcome, 0, len(claim.Rows))
	var cache []store.CacheEntry
	for i, r := range claim.Rows {
		o := store.Outcome{RowID: r.ID, Prov: store.Provenance{Source: "vendor", FetchedAt: now}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch}
		key := fmt.Sprint("nc:vp sales|company ", r.InputRow)
		if i%5 != 0 {
			url := fmt.Sprint("https://platform.example/in/jane-doe-", r.ID)
			o.Profile = &store.ProfileResult{ProfileURL: url, Name: "Jane Doe", Headline: "VP Sales at Company", Company: "Company",
				Role: "VP Sales", Location: "Berlin, DE", CompanySize: "51-200", Industry: "Software", Technographics: []string{"Salesforce", "AWS"}, Raw: raw}
			o.Email = &store.EmailResult{ProfileURL: url, Email: "jane@company.example", Confidence: 0.9, Verified: true,
				Raw: []byte(`{"email":"jane@company.example","confidence":0.9,"verified":true}`)}
			o.StagesDone, o.FoundProfileURL, o.AnyMatch, o.State = []domain.Stage{domain.StageProfile, domain.StageEmail}, url, true, domain.RowMatched
			cache = append(cache, store.CacheEntry{RowID: r.ID, Stage: domain.StageProfile, Key: key, Matched: true, Result: raw, FetchedAt: now},
				store.CacheEntry{RowID: r.ID, Stage: domain.StageEmail, Key: "url:" + url, Matched: true, Result: o.Email.Raw, FetchedAt: now})
		} else {
			o.NoMatches = []domain.Stage{domain.StageProfile}
			cache = append(cache, store.CacheEntry{RowID: r.ID, Stage: domain.StageProfile, Key: key, FetchedAt: now})
		}
		outs = append(outs, o)
	}
	return outs, cache
}
