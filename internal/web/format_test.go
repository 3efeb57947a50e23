package web

import (
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// Numbers carry their units and states read as words.
func TestWords(t *testing.T) {
	t.Parallel()
	five, none := int64(5000), (*int64)(nil)
	secs := func(n int64) *int64 { return &n }
	for _, c := range []struct{ got, want string }{
		{count(0), "0"}, {count(999), "999"}, {count(1000), "1,000"}, {count(int64(-1234567)), "-1,234,567"},
		{credits(1), "1 credit"}, {credits(12345), "12,345 credits"},
		{budget(&five), "5,000 credits"}, {budget(none), "no budget"},
		{percent(0.999), "99 %"}, {percent(1), "100 %"},
		{duration(0.2), "under a second"}, {duration(7.2), "about 8 s"}, {duration(61), "about 2 min"},
		{duration(3600), "about 1 h"}, {duration(5400), "about 1 h 30 min"},
		{eta(nil, domain.JobRunning), "not known yet"}, {eta(secs(90), domain.JobRunning), "about 2 min"},
		{eta(secs(90), domain.JobPaused), "paused"}, {eta(secs(0), domain.JobCompleted), "finished"},
		{stateWords(domain.JobQueued), "Waiting to start"}, {stateWords(domain.JobCompleted), "Done"},
		{rowWords(domain.RowNoMatch), "no match"},
		{ago(time.Unix(0, 0), time.Unix(30, 0)), "just now"}, {ago(time.Unix(0, 0), time.Unix(3*3600, 0)), "3 h ago"},
		{when(time.Date(2026, 11, 25, 13, 5, 9, 0, time.FixedZone("CET", 3600))), "2026-11-25 12:05 UTC"},
		{humanBytes(64 << 20), "64 MiB"}, {humanBytes(1 << 30), "1 GiB"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, s := range domain.JobStates {
		if stateWords(s) == string(s) {
			t.Errorf("job state %q has no words", s)
		}
	}
}
