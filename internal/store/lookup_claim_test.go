package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func TestLookupClaimsAreExclusive(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	won1, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, keys, "00000000-0000-0000-0000-000000000001", time.Minute)
	if err != nil || len(won1) != 3 {
		t.Fatalf("first claim won %v (%v)", won1, err)
	}
	won2, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"c", "d"}, "00000000-0000-0000-0000-000000000002", time.Minute)
	if err != nil || len(won2) != 1 || won2[0] != "d" {
		t.Fatalf("second claim won %v (%v), want only d", won2, err)
	}
	if err := st.ReleaseLookups(ctx, "00000000-0000-0000-0000-000000000001"); err != nil {
		t.Fatal(err)
	}
	won3, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"c"}, "00000000-0000-0000-0000-000000000002", time.Minute)
	if err != nil || len(won3) != 1 {
		t.Fatalf("after release: won %v (%v)", won3, err)
	}
	// An expired claim is taken over.
	if _, err := st.ClaimLookups(ctx, "acme", domain.StageEmail, []string{"x"}, "00000000-0000-0000-0000-000000000003", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PoolForTest(st).Exec(ctx, `UPDATE lookup_claims SET expires_at = now() - interval '1 second' WHERE input_key = 'x'`); err != nil {
		t.Fatal(err)
	}
	won4, err := st.ClaimLookups(ctx, "acme", domain.StageEmail, []string{"x"}, "00000000-0000-0000-0000-000000000004", time.Minute)
	if err != nil || len(won4) != 1 {
		t.Fatalf("expired claim not taken over: %v (%v)", won4, err)
	}
}

// SaveOutcomes gives up the lookup claims of its token with the answers it
// saves (one transaction), and nobody else's.
func TestSaveOutcomesGivesUpTheTokensLookupClaims(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	other := "00000000-0000-0000-0000-0000000000aa"
	claim := claimChunkAndLookups(t, st, other, time.Minute)
	now := time.Now()
	outs := []store.Outcome{
		{RowID: claim.Rows[0].ID, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch, Prov: store.Provenance{FetchedAt: now}},
		{RowID: claim.Rows[1].ID, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch, Prov: store.Provenance{FetchedAt: now}},
	}
	cache := []store.CacheEntry{{RowID: claim.Rows[0].ID, Stage: domain.StageProfile, Key: "k0", FetchedAt: now},
		{RowID: claim.Rows[1].ID, Stage: domain.StageProfile, Key: "k1", FetchedAt: now}}
	if ids, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, cache); err != nil || len(ids) != 2 {
		t.Fatalf("save: %v, %v", ids, err)
	}
	var mine, others int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FILTER (WHERE token = $1), count(*) FILTER (WHERE token <> $1) FROM lookup_claims`,
		claim.Token).Scan(&mine, &others); err != nil {
		t.Fatal(err)
	}
	if mine != 0 || others != 1 {
		t.Fatalf("after the save: %d claims of the token left (want 0), %d of another (want 1)", mine, others)
	}
	// The inputs are free to claim again, and found in the cache.
	if won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k0", "k1", "k2"}, other, time.Minute); err != nil || len(won) != 3 {
		t.Fatalf("claims after the save: %v, %v", won, err)
	}
	if hits, err := st.CachedAnswers(ctx, "acme", domain.StageProfile, []string{"k0", "k1"}, now.Add(-time.Minute)); err != nil || len(hits) != 2 {
		t.Fatalf("cache after the save: %v, %v", hits, err)
	}
}

// The heartbeat's ExtendLease keeps the token's lookup claims alive with its
// rows (nobody takes them over while it works), and only the token's.
func TestExtendLeaseExtendsTheTokensLookupClaims(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	claim := claimChunkAndLookups(t, st, "00000000-0000-0000-0000-0000000000bb", time.Millisecond)
	// Both tokens' claims have run out; the heartbeat comes for the first.
	if _, err := store.PoolForTest(st).Exec(ctx, `UPDATE lookup_claims SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if err := st.ExtendLease(ctx, claim.Token, claim.IDs(), time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	late := "00000000-0000-0000-0000-0000000000cc"
	won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k0", "k1", "k2"}, late, time.Minute)
	if err != nil || len(won) != 1 || won[0] != "k2" {
		t.Fatalf("a late claim won %v (%v): want only k2, the claim nobody extended", won, err)
	}
}

// claimChunkAndLookups claims the one chunk of a new two-row job, then the
// lookups k0 and k1 (tenant acme, stage profile) under its token and k2
// under other, each claim for ttl.
func claimChunkAndLookups(t *testing.T, st *store.Store, other string, ttl time.Duration) store.Claim {
	t.Helper()
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 2)
	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 2 {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	if won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k0", "k1"}, claim.Token, ttl); err != nil || len(won) != 2 {
		t.Fatalf("claims: %v, %v", won, err)
	}
	if won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k2"}, other, ttl); err != nil || len(won) != 1 {
		t.Fatalf("other claims: %v, %v", won, err)
	}
	return claim
}
