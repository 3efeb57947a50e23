package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// urls maps a Store that New opened to its database's URL, for the
// inspections below: they read (or spoil) what no store function exposes,
// on a connection of their own.
var urls sync.Map

// conn connects to st's database; st must come from New.
func conn(tb testing.TB, st *store.Store) *pgx.Conn {
	tb.Helper()
	u, ok := urls.Load(st)
	if !ok {
		tb.Fatal("storetest: the store was not opened by storetest.New")
	}
	c, err := pgx.Connect(context.Background(), u.(string))
	if err != nil {
		tb.Fatalf("storetest: connect: %v", err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// MatchedCacheForms counts the matched answers in the lookup cache, and
// those of them kept in the raw form ({"raw": ...}).
func MatchedCacheForms(tb testing.TB, st *store.Store) (raw, matched int) {
	tb.Helper()
	if err := conn(tb, st).QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE result ? 'raw'), count(*) FROM lookup_cache WHERE matched`).Scan(&raw, &matched); err != nil {
		tb.Fatalf("storetest: cache forms: %v", err)
	}
	return raw, matched
}

// SpoilCachedAnswer overwrites one matched cache entry of stage with a form
// no reader understands and returns its input key.
func SpoilCachedAnswer(tb testing.TB, st *store.Store, stage domain.Stage) (key string) {
	tb.Helper()
	if err := conn(tb, st).QueryRow(context.Background(), `UPDATE lookup_cache SET result = '{"profile": 5}'
		WHERE (tenant, stage, input_key) = (SELECT tenant, stage, min(input_key) FROM lookup_cache WHERE stage = $1 AND matched GROUP BY 1, 2)
		RETURNING input_key`, stage).Scan(&key); err != nil {
		tb.Fatalf("storetest: spoil a cached %s answer: %v", stage, err)
	}
	return key
}

// ResultsDigest is a job's results, a line a row in input order: ref,
// state, profile name, headline and raw record, email, confidence and raw
// record, the stages found nothing, and whether the results came from the
// cache.
func ResultsDigest(tb testing.TB, st *store.Store, jobID string) string {
	tb.Helper()
	var s string
	if err := conn(tb, st).QueryRow(context.Background(), `SELECT string_agg(concat_ws(' | ', r.ref, r.state, p.name, p.headline, p.raw::text,
			e.email, e.confidence::text, e.raw::text, (SELECT string_agg(stage, ',') FROM no_matches n WHERE n.row_id = r.id),
			coalesce(p.from_cache, e.from_cache)::text), E'\n' ORDER BY r.input_row)
		FROM job_rows r LEFT JOIN profile_results p ON p.row_id = r.id LEFT JOIN email_results e ON e.row_id = r.id
		WHERE r.job_id = $1`, jobID).Scan(&s); err != nil {
		tb.Fatalf("storetest: results of job %s: %v", jobID, err)
	}
	return s
}

// ProfileSources counts a job's profiles served from the cache and those
// bought from the vendor.
func ProfileSources(tb testing.TB, st *store.Store, jobID string) (fromCache, bought int) {
	tb.Helper()
	if err := conn(tb, st).QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE p.from_cache), count(*) FILTER (WHERE NOT p.from_cache)
		FROM job_rows r JOIN profile_results p ON p.row_id = r.id WHERE r.job_id = $1`, jobID).Scan(&fromCache, &bought); err != nil {
		tb.Fatalf("storetest: profile sources of job %s: %v", jobID, err)
	}
	return fromCache, bought
}

// UnknownCalls counts a job's vendor calls of unknown outcome in the ledger.
func UnknownCalls(tb testing.TB, st *store.Store, jobID string) int {
	tb.Helper()
	var n int
	if err := conn(tb, st).QueryRow(context.Background(),
		`SELECT count(*) FROM credit_ledger WHERE job_id = $1 AND status = 'unknown'`, jobID).Scan(&n); err != nil {
		tb.Fatalf("storetest: unknown calls of job %s: %v", jobID, err)
	}
	return n
}
