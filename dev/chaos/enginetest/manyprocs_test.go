package enginetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/domain"
)

// What a scheduler's log says when it starts leading, and what it logs
// when a round of sweeps did something (internal/maintenance). Who leads
// is read from these, not from the election's mechanism.
const (
	leadTaken  = "scheduler lock taken"
	sweepsDone = "maintenance"
)

// TestManyProcesses: 8 workers, 3 schedulers and 2 API processes share one
// vendor key, one Redis and one database. One job runs to completion,
// another until its budget stops it; the scheduler that leads is killed
// with SIGKILL mid-run. The vendor counts 50 requests a second in a
// bucket of half a second (vendor-api.md: a per-second limit); every
// worker is told that rate. The vendor's limit holds (429s under 1 % of its
// requests), the budget holds (spent and reserved never above it), every
// round of sweeps is run by the one leader of its time, and another
// scheduler takes the lead after the kill. Printed: the 429 share, the
// span of the vendor calls against calls ÷ rate, and the seconds from the
// kill to the new leader.
func TestManyProcesses(t *testing.T) {
	needBinary(t, "redis-server", "redis-server")
	t0 := time.Now()
	binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := rig.StartRedis(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)

	const (
		rate       = 50.0
		rowsA      = 600
		rowsB      = 300
		budgetB    = 150 // credits: the job stops about halfway
		workers    = 8
		schedulers = 3
		apis       = 2
	)
	s := newStack(t, stackConfig{redisEnv: []string{"REDIS_URL=" + r.URL}, vendorRPS: rate, vendorBurst: rate / 2,
		latency: 10 * time.Millisecond, concurrency: 2})
	_, apiURLs := s.startMany(ctx, apis, "api", "api", "api listening on ")
	s.startMany(ctx, workers, "worker", "worker", "worker started")
	scheds, _ := s.startMany(ctx, schedulers, "scheduler", "scheduler", "scheduler started")
	s.liftLimits(ctx, apiURLs[0])
	t.Logf("%d processes up %.1fs after the test began (binaries built)", workers+schedulers+apis, time.Since(t0).Seconds())

	// The leader is killed mid-run, once it has swept (so that its sweeps
	// show in its log): from a quarter of the calls on.
	killAt := make(chan struct{})
	s.onCall((rowsA+rowsB)/4, func() { close(killAt) })
	jobA := s.submit(ctx, apiURLs[0], "a", rowsA, 0)
	jobB := s.submit(ctx, apiURLs[1], "b", rowsB, budgetB)

	select {
	case <-killAt:
	case <-ctx.Done():
		t.Fatal("the vendor never got its call number", (rowsA+rowsB)/3)
	}
	leader := -1
	if err := pollUntil(ctx, 30*time.Second, func() bool {
		leader = -1
		for i, p := range scheds {
			if len(leadEvents(t, p.Log, leadTaken)) > 0 {
				leader = i
			}
		}
		return leader >= 0
	}); err != nil {
		t.Fatalf("no scheduler took the lead: %v; logs in %s", err, s.dir)
	}
	if err := pollUntil(ctx, 30*time.Second, func() bool { return len(leadEvents(t, scheds[leader].Log, sweepsDone)) > 0 }); err != nil {
		t.Fatalf("the leader %s logged no round of sweeps: %v", scheds[leader].Name, err)
	}
	if p, err := s.progress(ctx, jobA); err != nil || p.ended() {
		t.Fatalf("job a ended (%v) before the leader could be killed mid-run: raise rowsA", err)
	}
	scheds[leader].Kill()
	killed := time.Now()
	newLeader, handover := -1, time.Duration(0)
	if err := pollUntil(ctx, 90*time.Second, func() bool {
		for i, p := range scheds {
			if i != leader && len(leadEvents(t, p.Log, leadTaken)) > 0 {
				newLeader, handover = i, time.Since(killed)
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no scheduler took the lead after %s was killed: %v; logs in %s", scheds[leader].Name, err, s.dir)
	}

	pa := s.waitEnded(ctx, jobA, 150*time.Second, nil)
	pb := s.waitEnded(ctx, jobB, 30*time.Second, nil)
	s.waitReservations(ctx, 30*time.Second)

	// The vendor's limit, and how close to it the calls ran.
	n429, requests := s.share429()
	share := float64(n429) / float64(requests)
	times := s.callTimes()
	span := times[len(times)-1].Sub(times[0])
	ideal := time.Duration(float64(len(times)) / rate * float64(time.Second))
	t.Logf("%d workers, %d schedulers, %d APIs on one vendor key at %g req/s (a bucket of %d): %d requests, %d answered 429 (%.2f %%); "+
		"span %.1fs against calls / rate %.1fs (%.2fx)",
		workers, schedulers, apis, rate, int(rate/2), requests, n429, 100*share, span.Seconds(), ideal.Seconds(), span.Seconds()/ideal.Seconds())
	densest, densestAt := 0, time.Duration(0)
	for i, j := 0, 0; j < len(times); j++ {
		for times[j].Sub(times[i]) >= 100*time.Millisecond {
			i++
		}
		if j-i+1 > densest {
			densest, densestAt = j-i+1, times[i].Sub(times[0])
		}
	}
	t.Logf("densest 100 ms: %d requests, at %.1fs (the rate allows %g)", densest, densestAt.Seconds(), rate/10)
	if n429 > 0 {
		t.Logf("429s at %s after the first call; the leader was killed at %.1fs", strings.Join(s.throttledAt(times[0]), " "), killed.Sub(times[0]).Seconds())
	}
	if share >= 0.01 {
		t.Errorf("429 share %.2f %% (%d of %d): the shared limiter did not hold the vendor's limit", 100*share, n429, requests)
	}

	fa := s.figures(ctx, jobA, rowsA)
	t.Logf("job a (api-1): %s", summary(fa))
	if pa.job.State != domain.JobCompleted || !fa.OK() || fa.JobSpent != fa.Vendor {
		t.Errorf("job a: %s (%s); %s", pa.job.State, pa.job.StateReason, summary(fa))
	}
	fb := s.figures(ctx, jobB, 0)
	t.Logf("job b (api-2, budget %d): %s, %d/%d rows terminal; spent %d + reserved %d of budget %d; billed %d, %d double-charged",
		budgetB, pb.job.State, pb.terminal, pb.total, pb.job.CreditsSpent, pb.job.CreditsReserved, budgetB, fb.Vendor, fb.DoubleCharged)
	if pb.job.State != domain.JobPaused || pb.job.CreditsSpent+pb.job.CreditsReserved > budgetB || fb.Vendor > budgetB ||
		!fb.Money() || fb.DoubleCharged != 0 || fb.JobSpent != fb.Vendor {
		t.Errorf("job b: the budget did not hold, or its books do not match: %s (%s); %s", pb.job.State, pb.job.StateReason, summary(fb))
	}

	// Leadership, from the schedulers' logs: one leader before the kill,
	// one other after, and every round of sweeps by the leader of its time.
	for _, p := range scheds {
		p.Stop(10 * time.Second)
	}
	var leads []string
	sweeps := map[string]int{}
	for i, p := range scheds {
		for range leadEvents(t, p.Log, leadTaken) {
			leads = append(leads, p.Name)
		}
		for _, at := range leadEvents(t, p.Log, sweepsDone) {
			sweeps[p.Name]++
			ok := i == leader && !at.After(killed) || i == newLeader && !at.Before(killed)
			if !ok {
				t.Errorf("%s ran sweeps at %s without the lead (leader %s, killed at %s, then %s)", p.Name, at.Format(time.StampMilli),
					scheds[leader].Name, killed.Format(time.StampMilli), scheds[newLeader].Name)
			}
		}
	}
	slices.Sort(leads)
	t.Logf("leaders: %s, killed with SIGKILL; %s led %.1fs later (a scheduler tries for the lead every sweep interval); "+
		"rounds of sweeps that did something, by scheduler: %v", scheds[leader].Name, scheds[newLeader].Name, handover.Seconds(), sweeps)
	if sweeps[scheds[leader].Name] == 0 {
		t.Errorf("the first leader logged no round of sweeps (%v): nothing shows who swept", sweeps)
	}
	if len(leads) != 2 {
		t.Errorf("the lead was taken %d times (%s), want twice: before and after the kill", len(leads), strings.Join(leads, ", "))
	}
}

// leadEvents are the times of the log lines of path whose message starts
// with msg (for sweepsDone: is it).
func leadEvents(t *testing.T, path, msg string) []time.Time {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // the rig's own lines
		}
		if l.Msg == msg || msg != sweepsDone && strings.HasPrefix(l.Msg, msg) {
			out = append(out, l.Time)
		}
	}
	return out
}

func pollUntil(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
