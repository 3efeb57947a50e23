package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A download reads every row of the job once, in row order, across the
// cursor's batches, each row with its own extras and results; after a row
// id and of a state it reads only those; the CSV's keys come first.
func TestStreamResultsEveryRowOnceInOrder(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	const n = 2*store.StreamBatch + 7
	other := createJob(t, st, store.NewJob{ChunkSize: 100}, 50) // rows of another job between
	addResults(t, pool, other.ID)
	job := createJob(t, st, store.NewJob{ChunkSize: 100}, n)
	addResults(t, pool, job.ID)
	if _, err := pool.Exec(ctx, `UPDATE job_input_extras SET extra = jsonb_build_object('n', input_row::text) WHERE job_id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_input_extras SET extra = extra || '{"odd": "1"}' WHERE job_id = $1 AND input_row % 2 = 1`, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_rows SET state = 'failed' WHERE job_id = $1 AND input_row % 7 = 0`, job.ID); err != nil {
		t.Fatal(err)
	}

	read := func(q store.ResultStream) (keys []string, got []store.Result) {
		t.Helper()
		began := 0
		err := st.StreamResults(ctx, q, func(k []string) error {
			began++
			keys = k
			return nil
		}, func(r store.Result) error {
			got = append(got, r)
			return nil
		})
		if err != nil || began != 1 {
			t.Fatalf("StreamResults(%+v): began %d times: %v", q, began, err)
		}
		return keys, got
	}

	keys, all := read(store.ResultStream{JobID: job.ID, ExtraKeys: true, Idle: 10 * time.Second})
	if !slices.Equal(keys, []string{"n", "odd"}) {
		t.Errorf("extra keys %q, want n, odd", keys)
	}
	if len(all) != n {
		t.Fatalf("%d rows, want %d", len(all), n)
	}
	for i, r := range all {
		row := i + 1
		if r.InputRow != row || (i > 0 && r.RowID <= all[i-1].RowID) {
			t.Fatalf("line %d: input row %d, row id %d after %d", i, r.InputRow, r.RowID, all[max(i-1, 0)].RowID)
		}
		if r.Extra["n"] != fmt.Sprint(row) || (r.Extra["odd"] != "") != (row%2 == 1) {
			t.Fatalf("row %d: extras %v", row, r.Extra)
		}
		if r.Profile == nil || r.Profile.Name != fmt.Sprint("P ", row) || (r.FoundEmail != nil) != (row%2 == 0) ||
			(r.FoundPhones != nil) != (row%3 == 0) || (len(r.NoMatches) == 1) != (row%5 == 0) {
			t.Fatalf("row %d: profile %+v, email %+v, phones %+v, no match %v", row, r.Profile, r.FoundEmail, r.FoundPhones, r.NoMatches)
		}
	}

	// After a row id, the rows after it; no keys unless asked.
	keys, rest := read(store.ResultStream{JobID: job.ID, AfterID: all[1500].RowID})
	if keys != nil || len(rest) != n-1501 || rest[0].RowID != all[1501].RowID || rest[len(rest)-1].RowID != all[n-1].RowID {
		t.Fatalf("after row 1501: keys %q, %d rows", keys, len(rest))
	}

	// Of a state: only those, with the keys of their extras.
	keys, failed := read(store.ResultStream{JobID: job.ID, State: domain.RowFailed, ExtraKeys: true})
	if len(failed) != n/7 || !slices.Equal(keys, []string{"n", "odd"}) {
		t.Fatalf("failed: %d rows, keys %q; want %d", len(failed), keys, n/7)
	}
	for i, r := range failed {
		if r.State != domain.RowFailed || r.InputRow != 7*(i+1) {
			t.Fatalf("failed line %d: row %d %s", i, r.InputRow, r.State)
		}
	}

	// The reader's error ends the stream and comes back as it is.
	stop := errors.New("client gone")
	count := 0
	err := st.StreamResults(ctx, store.ResultStream{JobID: job.ID}, func([]string) error { return nil }, func(store.Result) error {
		count++
		if count == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || count != 10 {
		t.Fatalf("stopped after %d rows: %v", count, err)
	}
}
