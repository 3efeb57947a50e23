package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/upstream"
)

// The ceiling's baseline: the write path alone. The same rows are stored
// (untimed), the same answers are fetched from the fake vendor in advance
// (untimed), and then, timed, each chunk is claimed and its results, no-match
// markers, cache entries and row states are written with the store's
// SaveOutcomes, as many chunks at once as a worker runs: straight to
// Postgres, no queue, no HTTP, no vendor. It is the limit the persistence
// path puts on the pipeline.

type wpResult struct {
	elapsed     time.Duration
	chunks      int
	concurrency int
}

// envInt reads an ENRICHQ_* setting the way the processes see it.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func (b *bench) writePath(ctx context.Context, n int) (wpResult, error) {
	chunkSize := jobs.DefaultChunkSize
	conc := envInt("ENRICHQ_WORKER_CONCURRENCY", config.DefaultWorkerConcurrency)
	b.runSeq++
	name := fmt.Sprintf("enrichq_bench_%s_writepath_%d", b.runID, b.runSeq)
	dbURL, err := b.createDatabase(ctx, name)
	if err != nil {
		return wpResult{}, err
	}
	if !b.opts.keep {
		defer b.dropDatabase(context.Background(), name) //nolint:errcheck
	}
	// The worker's pool: concurrency + 4 connections.
	st, err := store.Open(ctx, dbURL, store.Options{MaxConns: int32(conc + 4)})
	if err != nil {
		return wpResult{}, err
	}
	defer st.Close()
	if err := st.Migrate(ctx, nil); err != nil {
		return wpResult{}, err
	}
	const tenant = "bench"
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: tenant, Name: "write path", Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail},
		Roles: []string{"VP Sales"}, MaxAge: 30 * 24 * time.Hour, SourceFormat: "csv", ChunkSize: chunkSize},
		func(add func(store.NewRow) error) error {
			for i := range n {
				if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprintf("crm-%07d", i+1), Kind: "name_company", Name: "VP Sales",
					Company: companyName(i, ""), Role: "VP Sales", Extra: map[string]string{"crm_owner": fmt.Sprintf("owner-%d", i%7)}}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return wpResult{}, err
	}
	outs, caches, err := answers(ctx, n, chunkSize)
	if err != nil {
		return wpResult{}, err
	}

	chunks := make(chan int, job.ChunkCount)
	for c := range job.ChunkCount {
		chunks <- c
	}
	close(chunks)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for c := range chunks {
				if err := saveChunk(ctx, st, tenant, job.ID, c, outs, caches[c]); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return wpResult{}, firstErr
	}
	counts, err := st.RowCounts(ctx, job.ID)
	if err != nil {
		return wpResult{}, err
	}
	if done := counts[domain.RowMatched] + counts[domain.RowNoMatch]; done != n {
		return wpResult{}, fmt.Errorf("write path: %d rows done of %d (%v)", done, n, counts)
	}
	return wpResult{elapsed: elapsed, chunks: job.ChunkCount, concurrency: conc}, nil
}

// saveChunk claims one chunk and writes its outcomes, as a worker does.
func saveChunk(ctx context.Context, st *store.Store, tenant, jobID string, chunk int, outs []store.Outcome, cache []store.CacheEntry) error {
	claim, err := st.ClaimChunk(ctx, jobID, chunk, 2*time.Minute)
	if err != nil {
		return err
	}
	batch := make([]store.Outcome, 0, len(claim.Rows))
	ids := make(map[int64]int64, len(claim.Rows)) // input row -> row id
	for _, r := range claim.Rows {
		o := outs[r.InputRow-1]
		o.RowID = r.ID
		batch = append(batch, o)
		ids[int64(r.InputRow)] = r.ID
	}
	entries := make([]store.CacheEntry, len(cache))
	for i, e := range cache {
		e.RowID = ids[e.RowID] // answers gave the input row
		entries[i] = e
	}
	written, err := st.SaveOutcomes(ctx, tenant, claim.Token, batch, entries)
	if err != nil {
		return err
	}
	if len(written) != len(batch) {
		return fmt.Errorf("chunk %d: %d of %d rows written", chunk, len(written), len(batch))
	}
	return nil
}

// answers asks an in-process fake vendor (same defaults, hence the same
// answers, as the bench's fake vendor) for every row, 100 rows a bulk call,
// and turns the answers into the outcomes and cache entries the worker
// writes (see internal/jobs: apply, toStoreProfile, EncodeCachedAnswer).
func answers(ctx context.Context, n, chunkSize int) ([]store.Outcome, [][]store.CacheEntry, error) {
	fv := enrichtest.NewSeed(enrichtest.DefaultSeedOptions())
	srv := httptest.NewServer(fv)
	defer srv.Close()
	client, err := seed.NewClient(seed.Config{BaseURL: srv.URL, APIKey: upstream.Secret(enrichtest.DefaultSeedOptions().APIKeys[0]),
		HTTPClient: &http.Client{Timeout: 30 * time.Second}})
	if err != nil {
		return nil, nil, err
	}
	outs := make([]store.Outcome, n)
	caches := make([][]store.CacheEntry, (n+chunkSize-1)/chunkSize)
	now := time.Now()
	for lo := 0; lo < n; lo += enrich.MaxBulkRows {
		hi := min(n, lo+enrich.MaxBulkRows)
		qs := make([]enrich.ProfileQuery, 0, hi-lo)
		for i := lo; i < hi; i++ {
			qs = append(qs, enrich.ProfileQuery{Name: "VP Sales", Company: companyName(i, "")})
		}
		res, err := client.Bulk(ctx, qs, []domain.Stage{domain.StageEmail}, "")
		if err != nil {
			return nil, nil, err
		}
		for k, it := range res.Items {
			i := lo + k
			if it.Err != nil {
				return nil, nil, fmt.Errorf("row %d: %w", i, it.Err)
			}
			o := store.Outcome{Prov: store.Provenance{Source: "vendor", FetchedAt: now}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch}
			key := "nc:vp sales|" + strings.ToLower(companyName(i, ""))
			// RowID: the input row until saveChunk knows the row's id.
			entry := store.CacheEntry{RowID: int64(i + 1), Stage: "profile", Key: key, FetchedAt: now}
			var emailEntry *store.CacheEntry
			if p := it.Profile; p != nil {
				o.Profile = &store.ProfileResult{ProfileURL: p.ProfileURL, Name: p.Name, Headline: p.Headline, Company: p.Company, Role: p.Role,
					Location: p.Location, CompanySize: p.CompanySize, Industry: p.Industry, Technographics: p.Technographics, Raw: p.Raw}
				o.FoundProfileURL, o.AnyMatch, o.State = p.ProfileURL, true, domain.RowMatched
				o.StagesDone = []domain.Stage{domain.StageProfile, domain.StageEmail}
				entry.Matched = true
				entry.Result = jobs.EncodeCachedAnswer("profile", p, nil, nil)
				e := store.CacheEntry{RowID: int64(i + 1), Stage: "email", Key: "url:" + p.ProfileURL, FetchedAt: now}
				if em := it.Email; em != nil {
					o.Email = &store.EmailResult{ProfileURL: p.ProfileURL, Email: em.Address, Confidence: em.Confidence, Verified: em.Verified, Raw: em.Raw}
					e.Matched = true
					e.Result = jobs.EncodeCachedAnswer("email", nil, em, nil)
				} else {
					o.NoMatches = append(o.NoMatches, "email")
				}
				emailEntry = &e
			} else {
				o.NoMatches = []domain.Stage{domain.StageProfile}
			}
			outs[i] = o
			c := i / chunkSize
			caches[c] = append(caches[c], entry)
			if emailEntry != nil {
				caches[c] = append(caches[c], *emailEntry)
			}
		}
	}
	return outs, caches, nil
}
