package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A company row expanded to 50 roles stores its wide extra columns once,
// not once a role: the bytes stored stay within a few times the upload's.
// (When every role copied them, this upload stored about 50 times its size.)
func TestWideExtrasWithManyRolesStoredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		rows      = 40
		extraCols = 20
		cellBytes = 1000 // random hex: Postgres cannot compress it away
	)
	var roles []string
	for i := range 50 {
		roles = append(roles, fmt.Sprintf("Role %d", i))
	}
	var csv strings.Builder
	csv.WriteString("company")
	for c := range extraCols {
		fmt.Fprintf(&csv, ",x%d", c)
	}
	csv.WriteString("\n")
	for r := range rows {
		fmt.Fprintf(&csv, "Company %d", r)
		for range extraCols {
			cell := make([]byte, cellBytes/2)
			_, _ = rand.Read(cell)
			csv.WriteString("," + hex.EncodeToString(cell))
		}
		csv.WriteString("\n")
	}
	before := storetest.JobRowBytes(t, b.Store)
	q := url.Values{"roles": {strings.Join(roles, ",")}}
	st := b.mustCreate(t, keyA, q.Encode(), csv.String())
	if st.Rows.Total != rows*len(roles) {
		t.Fatalf("%d rows, want %d", st.Rows.Total, rows*len(roles))
	}
	stored := storetest.JobRowBytes(t, b.Store) - before
	upload := int64(csv.Len())
	t.Logf("upload %d bytes (%d rows x %d roles, %d extra columns of %d bytes): %d bytes stored (%.1fx)",
		upload, rows, len(roles), extraCols, cellBytes, stored, float64(stored)/float64(upload))
	if stored > 4*upload {
		t.Fatalf("%d bytes stored for an upload of %d: extras are stored per role", stored, upload)
	}

	// Every role's result still echoes its row's extras.
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+st.ID+"/results?format=json&limit=100", keyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("results: %d %s", resp.StatusCode, data)
	}
	page := decode[resultsPageJSON](t, data)
	for _, l := range page.Results {
		if len(l.Extra) != extraCols || len(l.Extra["x0"]) != cellBytes {
			t.Fatalf("row %d (%s) echoes %d extras, want %d", l.Row, l.Role, len(l.Extra), extraCols)
		}
	}

	// A page of these wide rows is bounded in bytes, not only in rows: a
	// limit of 10,000 gives a page of a few MiB and a cursor, and the
	// cursors lead through every row once.
	seen := map[int]bool{}
	cursor, pages := "", 0
	for {
		path := "/v1/jobs/" + st.ID + "/results?format=json&limit=10000"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		resp, data := b.call(t, http.MethodGet, path, keyA, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("results: %d %s", resp.StatusCode, data)
		}
		if len(data) > 2*service.MaxResultsPageBytes {
			t.Fatalf("a page of %d bytes, over twice MaxResultsPageBytes", len(data))
		}
		page := decode[resultsPageJSON](t, data)
		pages++
		for _, l := range page.Results {
			key := l.Row*1000 + slices.Index(roles, l.Role)
			if seen[key] {
				t.Fatalf("row %d %s twice", l.Row, l.Role)
			}
			seen[key] = true
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(seen) != rows*len(roles) || pages < 3 {
		t.Fatalf("%d results in %d pages, want %d in several", len(seen), pages, rows*len(roles))
	}

	// The feed's pages are bounded in bytes too: every row's no-match
	// line, with its extras, comes in pages of a few MiB, each line once.
	job, err := b.Store.GetJob(context.Background(), tenantA, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := range job.ChunkCount {
		finishChunk(t, b.Store, tenantA, st.ID, chunk, func(int, store.Row) store.Outcome {
			return store.Outcome{State: domain.RowNoMatch, StagesDone: []domain.Stage{domain.StageProfile}, NoMatches: []domain.Stage{domain.StageProfile}}
		})
	}
	lines, since, pages := 0, int64(0), 0
	for {
		resp, data := b.call(t, http.MethodGet, fmt.Sprintf("/v1/results?since=%d&limit=10000", since), keyA, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("feed: %d %s", resp.StatusCode, data)
		}
		if len(data) > 2*store.MaxFeedPageBytes {
			t.Fatalf("a feed page of %d bytes, over twice MaxFeedPageBytes", len(data))
		}
		page := decode[feedPage](t, data)
		if len(page.Results) == 0 {
			break
		}
		pages++
		lines += len(page.Results)
		since = page.NextSince
	}
	if lines != rows*len(roles) || pages < 3 {
		t.Fatalf("%d feed lines in %d pages, want %d in several", lines, pages, rows*len(roles))
	}
}
