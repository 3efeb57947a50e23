package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// mover answers the profiles of its people with another company once on.
type mover struct {
	on    atomic.Bool
	moved map[string]bool
	inner http.Handler
	calls atomic.Int64
}

func (m *mover) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/profile" {
		m.inner.ServeHTTP(w, r)
		return
	}
	m.calls.Add(1)
	if !m.on.Load() || !m.moved[r.URL.Query().Get("profile_url")] {
		m.inner.ServeHTTP(w, r)
		return
	}
	enrichtest.ServeEdited(w, r, m.inner, func(a map[string]any) { a["company"] = "NewCo Ltd" })
}

func people(from, to int) string {
	var b strings.Builder
	b.WriteString("ref,profile_url\n")
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "crm-%03d,https://platform.example/in/person-%03d\n", i, i)
	}
	return b.String()
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// A watch's life from the command line on a moved clock: created with its
// estimate, a run now that buys the answers older than the period, the
// scheduled run that buys the rest, the changes listed, and the credits of
// the scheduled run against a full re-run. With -v the test prints the
// transcript.
func TestWatchLifeFromTheCLI(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	t0 := time.Now().UTC().Truncate(time.Second)
	now.Store(t0.Add(-5 * 24 * time.Hour).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	set := func(t time.Time) { now.Store(t.UnixNano()) }
	m := &mover{moved: map[string]bool{}}
	api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{
		VendorHandler: func(h http.Handler) http.Handler { m.inner = h; return m },
		Processor:     jobs.ProcessorConfig{Now: clock},
		Maintenance:   maintenance.Settings{Now: clock, ChunkSize: 20},
	}, Static: map[string]string{apiKey: "acme"}, Deps: func(d *httpapi.Deps) { d.Now = clock }})
	b := api.Bundle
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = b.Maintainer.RunOnce(ctx)
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	var transcript strings.Builder
	sh := func(args ...string) result {
		t.Helper()
		r := cli(t, api.URL, args...)
		fmt.Fprintf(&transcript, "[%s] $ enrichq %s\n%s%s", clock().Format(time.DateTime), strings.Join(args, " "), r.stdout, r.stderr)
		if r.err != nil {
			t.Fatalf("enrichq %s: %v", strings.Join(args, " "), r)
		}
		return r
	}
	// waitRun waits for a run's job and its comparison (by this step of
	// the scheduler, or the loop's, which may hold it at that moment).
	waitRun := func(jobID string) {
		t.Helper()
		b.WaitJob(t, jobID, domain.JobCompleted)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(30 * time.Second); !storetest.WatchRunDiffed(t, b.Store, jobID); <-tick.C {
			if _, err := b.Maintainer.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s not compared after 30s", jobID)
			}
		}
		sh("status", jobID)
	}

	// Forty of the people were bought five days ago; the list of 100 today.
	sh("submit", writeFile(t, "early.csv", people(0, 40)), "--wait", "--interval", "20ms")
	set(t0)
	list := sh("submit", writeFile(t, "people.csv", people(0, 100)), "--wait", "--interval", "20ms")
	jobID := uuidRE.FindString(list.stdout)
	created := sh("watch", "create", jobID, "--every", "7d", "--cap", "500")
	if !strings.Contains(created.stdout, "estimate: 100-100 credits a run, 4.29 runs a month: 429-429 credits a month") {
		t.Fatalf("create: %s", created)
	}
	watchID := uuidRE.FindString(created.stdout)

	// Some people change company.
	moved := 0
	for i := 0; i < 100 && moved < 6; i += 7 {
		u := fmt.Sprintf("https://platform.example/in/person-%03d", i)
		if b.Vendor.ProfileHit(enrich.ProfileQuery{ProfileURL: u}) {
			m.moved[u] = true
			moved++
		}
	}
	m.on.Store(true)

	set(t0.Add(3 * 24 * time.Hour))
	calls := m.calls.Load()
	run1 := sh("watch", "run", watchID)
	waitRun(strings.TrimSpace(run1.stdout))
	first := m.calls.Load() - calls

	show := sh("watch", "show", watchID)
	next := regexp.MustCompile(`next run at (\S+)`).FindStringSubmatch(show.stdout)
	at, err := time.Parse(time.RFC3339, next[1])
	if err != nil {
		t.Fatal(err)
	}
	set(at.Add(time.Minute))
	calls = m.calls.Load()
	// The slot is due: its run starts at the next sweep that finds the
	// watch unlocked (the sweep skips a watch another transaction holds).
	var runs []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		if _, err := b.Maintainer.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if runs = storetest.WatchRunJobs(t, b.Store, watchID); len(runs) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(runs) != 2 {
		t.Fatalf("runs after the slot: %v", runs)
	}
	waitRun(runs[1])
	second := m.calls.Load() - calls
	changes := sh("watch", "changes", watchID)
	if got := strings.Count(changes.stdout, "NewCo Ltd"); got != moved {
		t.Errorf("changes listed: %d, want %d:\n%s", got, moved, changes.stdout)
	}
	sh("watch", "list")

	calls = m.calls.Load()
	full := sh("watch", "run", watchID, "--max-age", "0s")
	waitRun(strings.TrimSpace(full.stdout))
	fullCalls := m.calls.Load() - calls
	sh("watch", "show", watchID)
	sh("watch", "pause", watchID)
	if first != 40 || second != 60 || fullCalls != 100 {
		t.Errorf("vendor calls: run now %d (want 40), scheduled run %d (want 60), full re-run %d (want 100)", first, second, fullCalls)
	}
	fmt.Fprintf(&transcript, "profile calls (1 credit each): run now %d, scheduled run %d, full re-run %d\n", first, second, fullCalls)
	t.Log("\n" + transcript.String())
}
