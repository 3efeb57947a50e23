package enginetest

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
)

// TestSentinelFailover: Redis as a primary, a replica and three sentinels
// (down-after-milliseconds 5000, well under asynq's 30 s lease), with a
// password; the api, two workers and the scheduler reach it only through
// the sentinels, in REDIS_URL's database 2 with its password. The
// primary is killed with SIGKILL a fifth into a job. The sentinels promote
// the replica, every client follows, and the job ends with every row
// terminal, none lost, none charged twice, and its spend equal to the
// vendor's bill. Printed: how long the failover took, and how long from
// the kill until vendor calls (the limiter's state is in Redis) and rows
// finishing came back.
func TestSentinelFailover(t *testing.T) {
	needBinary(t, "redis-server", "redis-server")
	needBinary(t, rig.SentinelBinary, "redis-sentinel")
	t0 := time.Now()
	binaries(t)
	t.Logf("binaries built in %.1fs", time.Since(t0).Seconds())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	master := "enginetest-" + randomHex(3)
	dir := t.TempDir()
	password := "pw-" + randomHex(4)
	g, err := rig.StartSentinelGroup(ctx, filepath.Join(dir, "redis"), master, rig.SentinelSettings{Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	t.Logf("sentinel group up in %.1fs", time.Since(t0).Seconds())

	const (
		rows   = 800
		rate   = 40.0
		faultN = rows / 5
	)
	s := newStack(t, stackConfig{
		// Its host is unused (the sentinels name the primary); its password and database apply.
		redisEnv: []string{"REDIS_URL=redis://:" + password + "@127.0.0.1:1/2",
			"ENRICHQ_REDIS_SENTINELS=" + strings.Join(g.SentinelAddrs(), ","), "ENRICHQ_REDIS_MASTER=" + master},
		vendorRPS: rate, vendorBurst: 4, latency: 10 * time.Millisecond, concurrency: 4,
	})
	_, api := s.start(ctx, "api", "api", "api listening on ")
	s.startMany(ctx, 2, "worker", "worker", "worker started")
	s.start(ctx, "scheduler", "scheduler", "scheduler started")
	s.liftLimits(ctx, api)
	t.Logf("enrichq up in %.1fs", time.Since(t0).Seconds())

	var (
		faultMu sync.Mutex
		faultAt time.Time
	)
	killed := make(chan struct{})
	s.onCall(faultN, func() {
		go func() {
			faultMu.Lock()
			faultAt = time.Now()
			faultMu.Unlock()
			g.Primary.Kill()
			close(killed)
		}()
	})
	jobID := s.submit(ctx, api, "sentinel", rows, 0)

	type sample struct {
		at       time.Time
		terminal int
	}
	var samples []sample
	failoverDone := make(chan time.Duration, 1)
	go func() {
		select {
		case <-killed:
		case <-ctx.Done():
			return
		}
		faultMu.Lock()
		at := faultAt
		faultMu.Unlock()
		if err := g.WaitFailover(ctx, time.Minute); err != nil {
			t.Error(err)
			failoverDone <- -1
			return
		}
		failoverDone <- time.Since(at)
	}()
	p := s.waitEnded(ctx, jobID, 150*time.Second, func(at time.Time, p progress) {
		samples = append(samples, sample{at, p.terminal})
	})
	select {
	case <-killed:
	default:
		t.Fatalf("the job ended (%s) before the vendor's %dth call: no fault was injected", p.job.State, faultN)
	}
	failover := <-failoverDone
	if p.job.State != domain.JobCompleted {
		t.Fatalf("job %s: %s (%s), %d/%d rows terminal; logs in %s", jobID, p.job.State, p.job.StateReason, p.terminal, p.total, s.dir)
	}
	s.waitReservations(ctx, 30*time.Second)
	f := s.figures(ctx, jobID, rows)
	t.Logf("sentinel failover (kill -9 of the primary at call %d of ~%d): %s", faultN, rows, summary(f))

	// From the fault to progress: the limiter's slots come from Redis, so
	// the calls stop while there is no primary. Calls that held a slot
	// already go out after the kill; the longest silence after it is the
	// outage, and the call that ends it the first on the new primary.
	faultMu.Lock()
	at := faultAt
	faultMu.Unlock()
	var resumed time.Time
	prev, gap := at, time.Duration(0)
	for _, c := range s.callTimes() {
		if c.Before(at) {
			continue
		}
		if d := c.Sub(prev); d > gap {
			gap, resumed = d, c
		}
		prev = c
	}
	var finishing time.Time
	before := -1
	for _, sm := range samples {
		if sm.at.Before(resumed) {
			before = sm.terminal
			continue
		}
		if before >= 0 && sm.terminal > before {
			finishing = sm.at
			break
		}
	}
	t.Logf("sentinel settings: %s; failover (every sentinel names the replica, which says role:master) %.1fs after the kill; "+
		"vendor calls again %.1fs after (after %.1fs without one); rows finishing again %.1fs after",
		g.Settings, failover.Seconds(), resumed.Sub(at).Seconds(), gap.Seconds(), finishing.Sub(at).Seconds())

	if !f.OK() || f.JobSpent != f.Vendor || f.Unknown != 0 {
		t.Errorf("invariants: %s; %d calls of unknown outcome; logs in %s", summary(f), f.UnknownCalls, s.dir)
	}
	if resumed.IsZero() {
		t.Errorf("no vendor call after the kill")
	}

	// REDIS_URL's database held the queue, on the new primary, through Sentinel.
	for db, want := range map[int]bool{2: true, 0: false} {
		c := redis.NewClient(&redis.Options{Addr: g.Replica.Addr, Password: password, DB: db})
		n, err := c.Exists(ctx, jobs.QueueMarkerKey("enginetest-"+s.tag), "asynq:queues").Result()
		c.Close()
		if err != nil || (n == 2) != want || (n == 0) == want {
			t.Errorf("database %d of the new primary holds %d of the queue's keys (%v), want them %v", db, n, err, map[bool]string{true: "all", false: "none"}[want])
		}
	}
}
