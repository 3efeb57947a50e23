package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
)

// A page may end before its limit (pages are bounded in bytes): only an
// empty page ends the list, and max stops it early.
func TestReadSinceGoesOnPastShortPages(t *testing.T) {
	t.Parallel()
	const last = 7
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		since, _ := strconv.Atoi(r.URL.Query().Get("since"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		items := []json.RawMessage{}
		next := since
		for seq := since + 1; seq <= last && len(items) < min(limit, 2); seq++ { // at most 2 a page, whatever the limit
			items = append(items, json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)))
			next = seq
		}
		json.NewEncoder(w).Encode(map[string]any{"lines": items, "next_since": next})
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	c := newClient(base, "k")
	for _, tc := range []struct {
		since      int64
		max, wantN int
		wantNext   int64
	}{
		{0, 0, last, last},
		{3, 0, last - 3, last},
		{0, 3, 3, 3},
		{last, 0, 0, last},
	} {
		var seen []int64
		n, next, err := c.readSince(context.Background(), "/v1/audit", "lines", tc.since, tc.max, func(raw json.RawMessage) error {
			var l struct{ Seq int64 }
			err := json.Unmarshal(raw, &l)
			seen = append(seen, l.Seq)
			return err
		})
		if err != nil || n != tc.wantN || next != tc.wantNext || len(seen) != tc.wantN {
			t.Errorf("since %d max %d: %d items %v, next %d, %v; want %d items, next %d", tc.since, tc.max, n, seen, next, err, tc.wantN, tc.wantNext)
		}
		for i, s := range seen {
			if s != tc.since+int64(i)+1 {
				t.Errorf("since %d: item %d is seq %d", tc.since, i, s)
			}
		}
	}
}
