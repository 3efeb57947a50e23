package store_test

import (
	"context"
	"testing"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Migration 00012 moves the extras every role copied into one row per
// input row, and its down migration puts them back on every role.
func TestMigrationMovesExtrasOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	if err := st.MigrateTo(ctx, 11); err != nil {
		t.Fatalf("down to 11: %v", err)
	}
	// A job of two input rows, three roles each; the second row has no extras.
	if err := st.Exec(ctx, `WITH j AS (INSERT INTO jobs (tenant, lookups, roles) VALUES ('acme', '{profile}', '{a,b,c}') RETURNING id)
		INSERT INTO job_rows (job_id, chunk, input_row, input_kind, company, role, extra)
		SELECT j.id, 0, r, 'name_company', 'Acme', role, CASE WHEN r = 1 THEN '{"owner": "kim", "region": "EU"}'::jsonb END
		FROM j, generate_series(1, 2) AS r, unnest(ARRAY['a', 'b', 'c']) AS role`); err != nil {
		t.Fatal(err)
	}
	if err := st.MigrateTo(ctx, 12); err != nil {
		t.Fatalf("up to 12: %v", err)
	}
	if n, err := st.Count(ctx, `SELECT count(*) FROM job_input_extras WHERE input_row = 1 AND extra = '{"owner": "kim", "region": "EU"}'`); err != nil || n != 1 {
		t.Fatalf("extras after the migration: %d rows (%v), want the one of input row 1", n, err)
	}
	if n, err := st.Count(ctx, `SELECT count(*) FROM job_input_extras`); err != nil || n != 1 {
		t.Fatalf("%d rows of extras (%v), want 1", n, err)
	}
	if err := st.MigrateTo(ctx, 11); err != nil {
		t.Fatalf("down to 11 again: %v", err)
	}
	if n, err := st.Count(ctx, `SELECT count(*) FROM job_rows WHERE extra->>'owner' = 'kim'`); err != nil || n != 3 {
		t.Fatalf("after the down migration %d rows hold the extras (%v), want the 3 roles of row 1", n, err)
	}
	if err := st.MigrateTo(ctx, 1<<31); err != nil { // every migration
		t.Fatalf("up again: %v", err)
	}
}
