package store_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The columns a row's claim, save, release and lease sweep change.
var rowStateColumns = []string{"state", "state_reason", "last_error", "attempts", "next_attempt_at", "lease_until",
	"lease_token", "found_profile_url", "stages_done", "any_match", "finished_at", "updated_at"}

// A row's claim and save update it in place (a HOT update) only if no index
// of job_rows names a column they change, in its keys or in its WHERE
// (migrations/00001_schema.sql): an index on the state or the lease makes
// every claim and every save write an entry into every index of the table.
// And the table keeps free room on its pages for the new versions.
func TestRowStateChangesTouchNoIndex(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	rows, err := store.PoolForTest(st).Query(ctx, `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid = 'job_rows'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if defs["job_rows_chunk"] == "" {
		t.Fatalf("no index job_rows_chunk (the claim's) among %v", defs)
	}
	for name, def := range defs {
		// What follows "USING btree": the keys and the WHERE.
		_, body, _ := strings.Cut(def, " USING ")
		for _, col := range rowStateColumns {
			if regexp.MustCompile(`\b` + col + `\b`).MatchString(body) {
				t.Errorf("index %s names %s, which every claim or save changes: %s", name, col, def)
			}
		}
	}
	var fill int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT coalesce((SELECT split_part(o, '=', 2)::int FROM unnest(reloptions) o
		WHERE o LIKE 'fillfactor=%'), 100) FROM pg_class WHERE oid = 'job_rows'::regclass`).Scan(&fill); err != nil {
		t.Fatal(err)
	}
	if fill > 50 {
		t.Errorf("job_rows fillfactor %d: a chunk's new row versions do not fit beside the old ones", fill)
	}
}

// The cache's and the claims' keys compare bytes (COLLATE "C"): every
// row reads, claims and writes them, and under a database's own collation
// (en_US.UTF-8 in the official postgres image) each btree step is a
// strcoll(): 22 % of the ceiling benchmark. Their primary keys follow.
func TestCacheAndClaimKeysCompareBytes(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	rows, err := store.PoolForTest(st).Query(ctx, `SELECT a.attrelid::regclass::text || '.' || a.attname, coalesce(c.collname, '')
		FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation
		WHERE a.attrelid IN ('lookup_cache'::regclass, 'lookup_claims'::regclass) AND a.attname IN ('tenant', 'stage', 'input_key')
		UNION ALL
		SELECT i.indexrelid::regclass::text || '#' || k.ord, coalesce(c.collname, '')
		FROM pg_index i CROSS JOIN LATERAL unnest(i.indcollation) WITH ORDINALITY AS k(coll, ord)
		LEFT JOIN pg_collation c ON c.oid = k.coll
		WHERE i.indexrelid IN ('lookup_cache_pkey'::regclass, 'lookup_claims_pkey'::regclass)`)
	if err != nil {
		t.Fatal(err)
	}
	colls := map[string]string{}
	for rows.Next() {
		var what, coll string
		if err := rows.Scan(&what, &coll); err != nil {
			t.Fatal(err)
		}
		colls[what] = coll
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(colls) != 12 {
		t.Fatalf("found %d columns and index keys, want 12: %v", len(colls), colls)
	}
	for what, coll := range colls {
		if coll != "C" {
			t.Errorf("%s compares with collation %q, want C", what, coll)
		}
	}
}
