package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// feedJob creates a job of n name+company rows for tenant, in one chunk of
// up to 1000 rows, and claims them.
func feedJob(t *testing.T, st *store.Store, tenant string, n int) (store.Job, store.Claim) {
	t.Helper()
	ctx := context.Background()
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: tenant, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, ChunkSize: 1000},
		func(add func(store.NewRow) error) error {
			for i := range n {
				if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprint("ref-", i), Kind: domain.InputNameCompany,
					Name: "VP Sales", Company: fmt.Sprint("Co ", i), Extra: map[string]string{"owner": "kim"}}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != n {
		t.Fatalf("claim: %d rows, err %v", len(claim.Rows), err)
	}
	return job, claim
}

// profileOutcome is a matched row with a profile and, when withEmail, an email.
func profileOutcome(r store.Row, withEmail bool) store.Outcome {
	url := "https://platform.example/in/" + r.Ref
	o := store.Outcome{RowID: r.ID, State: domain.RowMatched, StagesDone: []domain.Stage{domain.StageProfile}, AnyMatch: true, FoundProfileURL: url,
		Profile: &store.ProfileResult{ProfileURL: url, Name: "Person " + r.Ref, Role: "VP Sales", Company: r.Company,
			Technographics: []string{"go", "postgres"}, Raw: []byte(`{"unknown_field": 1}`)},
		Prov: store.Provenance{FetchedAt: time.Now()}}
	if withEmail {
		o.StagesDone = append(o.StagesDone, domain.StageEmail)
		o.Email = &store.EmailResult{ProfileURL: url, Email: r.Ref + "@example.com", Confidence: 0.9, Verified: true, Raw: []byte(`{}`)}
	}
	return o
}

func noMatchOutcome(r store.Row) store.Outcome {
	return store.Outcome{RowID: r.ID, State: domain.RowNoMatch, StagesDone: []domain.Stage{domain.StageProfile}, NoMatches: []domain.Stage{domain.StageProfile},
		Prov: store.Provenance{FetchedAt: time.Now()}}
}

func save(t *testing.T, st *store.Store, tenant string, claim store.Claim, outs ...store.Outcome) {
	t.Helper()
	ids, err := st.SaveOutcomes(context.Background(), tenant, claim.Token, outs, nil)
	if err != nil || len(ids) != len(outs) {
		t.Fatalf("SaveOutcomes: %d of %d written, err %v", len(ids), len(outs), err)
	}
}

// feedKey names a result row: its kind and its seq in the kind's table.
type feedKey struct {
	kind string
	seq  int64
}

// feedReader reads a tenant's feed the way an ETL job does: advance, then
// every line after the last position it saw, page by page.
type feedReader struct {
	st     *store.Store
	tenant string
	last   int64
	seen   map[feedKey]int64 // → the feed position it was read at
}

func newFeedReader(st *store.Store, tenant string) *feedReader {
	return &feedReader{st: st, tenant: tenant, seen: map[feedKey]int64{}}
}

// read returns the new lines; it fails the test on a line seen before or a
// position not after the last one.
func (fr *feedReader) read(t *testing.T) []store.FeedItem {
	ctx := context.Background()
	if _, err := fr.st.AdvanceResultsFeed(ctx); err != nil {
		t.Error(err)
		return nil
	}
	var out []store.FeedItem
	for {
		page, err := fr.st.ResultsFeed(ctx, fr.tenant, fr.last, 7) // small pages: paging is part of the test
		if err != nil {
			t.Error(err)
			return out
		}
		for _, it := range page {
			k := feedKey{it.Kind, it.SourceSeq}
			if at, dup := fr.seen[k]; dup {
				t.Errorf("%s %d read twice: at position %d and %d", it.Kind, it.SourceSeq, at, it.Seq)
			}
			if it.Seq <= fr.last {
				t.Errorf("position %d after %d", it.Seq, fr.last)
			}
			fr.seen[k] = it.Seq
			fr.last = it.Seq
		}
		out = append(out, page...)
		if len(page) < 7 {
			return out
		}
	}
}

// stored lists every result row and no-match marker of tenant's jobs.
func stored(t *testing.T, st *store.Store, tenant string) map[feedKey]bool {
	t.Helper()
	rows, err := store.PoolForTest(st).Query(context.Background(), `
		SELECT x.kind, x.seq FROM (
			SELECT 'profile' AS kind, seq, job_id FROM profile_results
			UNION ALL SELECT 'email', seq, job_id FROM email_results
			UNION ALL SELECT 'phone', seq, job_id FROM phone_results
			UNION ALL SELECT 'no_match', seq, job_id FROM no_matches) x
		JOIN jobs j ON j.id = x.job_id WHERE j.tenant = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[feedKey]bool{}
	for rows.Next() {
		var k feedKey
		if err := rows.Scan(&k.kind, &k.seq); err != nil {
			t.Fatal(err)
		}
		out[k] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkSeenAll(t *testing.T, fr *feedReader, want map[feedKey]bool) {
	t.Helper()
	for k := range want {
		if _, ok := fr.seen[k]; !ok {
			t.Errorf("%s %d never read", k.kind, k.seq)
		}
	}
	for k := range fr.seen {
		if !want[k] {
			t.Errorf("%s %d read but not a result of tenant %s", k.kind, k.seq, fr.tenant)
		}
	}
}

// kinds summarises feed lines as "kind:ref" strings.
func kinds(items []store.FeedItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Kind + ":" + it.Ref
	}
	return out
}

// TestResultsFeedExactlyOnce reads the feed incrementally while results are
// written, one of them by a transaction that commits after a later one: a
// plain "seq > last" over the result table skips that row; the feed does not.
func TestResultsFeedExactlyOnce(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job, claim := feedJob(t, st, "acme", 8)
	other, otherClaim := feedJob(t, st, "beta", 2)
	r := claim.Rows
	acme, beta := newFeedReader(st, "acme"), newFeedReader(st, "beta")

	if got := acme.read(t); len(got) != 0 {
		t.Fatalf("empty feed read %v", kinds(got))
	}
	save(t, st, "acme", claim, profileOutcome(r[0], true), noMatchOutcome(r[1]), profileOutcome(r[2], false))
	save(t, st, "beta", otherClaim, profileOutcome(otherClaim.Rows[0], false))
	first := acme.read(t)
	if got, want := fmt.Sprint(kinds(first)), "[profile:ref-0 email:ref-0 no_match:ref-1 profile:ref-2]"; got != want {
		t.Fatalf("first read: %s, want %s", got, want)
	}
	it := first[0]
	if it.JobID != job.ID || it.InputRow != 1 || it.Name != "VP Sales" || it.Company != "Co 0" || it.Extra["owner"] != "kim" ||
		it.Profile == nil || it.Profile.Name != "Person ref-0" || len(it.Profile.Technographics) != 2 || it.FetchedAt.IsZero() {
		t.Fatalf("first line: %+v (profile %+v)", it, it.Profile)
	}
	if e := first[1].FoundEmail; e == nil || e.Email != "ref-0@example.com" || !e.Verified || e.ProfileURL == "" {
		t.Fatalf("email line: %+v", first[1])
	}
	if first[2].Stage != domain.StageProfile || first[2].Profile != nil {
		t.Fatalf("no-match line: %+v", first[2])
	}

	// A worker's transaction takes a seq for row 3 and stays open...
	late, err := store.PoolForTest(st).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	var lateSeq int64
	if err := late.QueryRow(ctx, `INSERT INTO profile_results (job_id, row_id, profile_url, name, raw, fetched_at)
		VALUES ($1, $2, 'https://platform.example/in/late', 'Late Commit', '{}', now()) RETURNING seq`, job.ID, r[3].ID).Scan(&lateSeq); err != nil {
		t.Fatal(err)
	}
	// ...while later rows commit.
	save(t, st, "acme", claim, profileOutcome(r[4], false), profileOutcome(r[5], false))
	var naiveLast int64
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT max(seq) FROM profile_results WHERE job_id = $1`, job.ID).Scan(&naiveLast); err != nil {
		t.Fatal(err)
	}
	if naiveLast <= lateSeq {
		t.Fatalf("the test does not set up the hazard: the last visible seq %d is not after the open one %d", naiveLast, lateSeq)
	}
	second := acme.read(t)
	if got, want := fmt.Sprint(kinds(second)), "[profile:ref-4 profile:ref-5]"; got != want {
		t.Fatalf("second read (row 3 uncommitted): %s, want %s", got, want)
	}

	// The late transaction commits; more results come in.
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	save(t, st, "acme", claim, noMatchOutcome(r[6]))
	save(t, st, "beta", otherClaim, noMatchOutcome(otherClaim.Rows[1]))
	// Where "seq > last" over profile_results would have resumed: row 3 is behind it.
	var naive int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FROM profile_results WHERE job_id = $1 AND seq > $2 AND row_id = $3`,
		job.ID, naiveLast, r[3].ID).Scan(&naive); err != nil || naive != 0 {
		t.Fatalf("naive read finds the late row %d times (err %v); the hazard is gone?", naive, err)
	}
	third := acme.read(t)
	if got, want := fmt.Sprint(kinds(third)), "[profile:ref-3 no_match:ref-6]"; got != want {
		t.Fatalf("third read (row 3 committed): %s, want %s", got, want)
	}
	if third[0].SourceSeq != lateSeq || third[0].Profile.Name != "Late Commit" {
		t.Fatalf("late line: %+v", third[0])
	}
	if got := acme.read(t); len(got) != 0 {
		t.Fatalf("fourth read, nothing written: %v", kinds(got))
	}
	save(t, st, "acme", claim, profileOutcome(r[7], true))
	if got, want := fmt.Sprint(kinds(acme.read(t))), "[profile:ref-7 email:ref-7]"; got != want {
		t.Fatalf("fifth read: %s, want %s", got, want)
	}
	checkSeenAll(t, acme, stored(t, st, "acme"))

	// The other tenant reads its own lines only, each once.
	if got, want := fmt.Sprint(kinds(beta.read(t))), "[profile:ref-0 no_match:ref-1]"; got != want {
		t.Fatalf("beta: %s, want %s", got, want)
	}
	checkSeenAll(t, beta, stored(t, st, "beta"))
	for _, it := range append(append(first, second...), third...) {
		if it.JobID == other.ID {
			t.Fatalf("acme read beta's line %+v", it)
		}
	}
}

// TestResultsFeedConcurrentWriters has writers commit results in random
// order (each holds its transaction open a random while after taking its
// seq) while readers read the feed incrementally: every reader reads every
// result exactly once.
func TestResultsFeedConcurrentWriters(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	const writers, perWriter, readers = 6, 25, 3
	job, claim := feedJob(t, st, "acme", writers*perWriter)

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				row := claim.Rows[w*perWriter+i]
				tx, err := store.PoolForTest(st).Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == 2 {
					_, err = tx.Exec(ctx, `INSERT INTO no_matches (job_id, row_id, stage, checked_at) VALUES ($1, $2, 'profile', now())`, job.ID, row.ID)
				} else {
					_, err = tx.Exec(ctx, `INSERT INTO profile_results (job_id, row_id, profile_url, raw, fetched_at)
						VALUES ($1, $2, 'https://platform.example/in/x', '{}', now())`, job.ID, row.ID)
				}
				if err != nil {
					t.Error(err)
					_ = tx.Rollback(ctx)
					return
				}
				time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
				if i%10 == 9 {
					_ = tx.Rollback(ctx) // an aborted write is never read
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()

	var rg sync.WaitGroup
	frs := make([]*feedReader, readers)
	for i := range frs {
		frs[i] = newFeedReader(st, "acme")
		rg.Go(func() {
			for {
				select {
				case <-writing:
					frs[i].read(t) // the rest
					return
				default:
					frs[i].read(t)
				}
			}
		})
	}
	rg.Wait()
	want := stored(t, st, "acme")
	if n := writers * (perWriter - perWriter/10); len(want) != n {
		t.Fatalf("%d results stored, want %d", len(want), n)
	}
	for _, fr := range frs {
		checkSeenAll(t, fr, want)
	}
}

// The advance runs at READ COMMITTED only: in a REPEATABLE READ transaction
// it says so and logs nothing; in autocommit it logs what is new.
func TestAdvanceNeedsReadCommitted(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	_, claim := feedJob(t, st, "acme", 2)
	save(t, st, "acme", claim, profileOutcome(claim.Rows[0], true), noMatchOutcome(claim.Rows[1]))
	tx, err := store.PoolForTest(st).BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	err = tx.QueryRow(ctx, `SELECT results_feed_advance()`).Scan(&n)
	_ = tx.Rollback(ctx)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25001" || !strings.Contains(pgErr.Message, "READ COMMITTED") {
		t.Fatalf("advance in a REPEATABLE READ transaction: %v", err)
	}
	if n, err := st.AdvanceResultsFeed(ctx); err != nil || n != 3 {
		t.Fatalf("advance in autocommit: %d lines, %v; want 3", n, err)
	}
}
