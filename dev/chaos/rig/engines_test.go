package rig_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The engine tests run the real engines of a deployment past one machine:
// a Postgres primary with a synchronous standby, failed over mid-job, and
// PgBouncer in transaction mode. Each starts its own servers on loopback
// from the Debian packages (skipped, saying which, when they are missing),
// and ends as every fault test does: every row terminal, none lost, none
// charged twice, the ledger equal to the fake vendor's bill; and it prints
// how long rows took to finish again after the fault.

// skipWithoutEngine skips the test when err says an engine is missing.
func skipWithoutEngine(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, rig.ErrNoEngine) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// engineRig is the rig of an engine test: n lookups (profile and email,
// single lookups) against a fake vendor answering in 5 ms.
func engineRig(t *testing.T, database string) *stack {
	return newRig(t, rigConfig{database: database,
		processor: jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 4, Lease: 2 * time.Second},
		vendor:    func(o *enrichtest.SeedOptions) { o.Latency = 5 * time.Millisecond }})
}

// reachable waits until st answers again after a fault (its pool drops the
// connections the fault cut as they fail).
func reachable(t *testing.T, st *store.Store, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := st.Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database is not reachable %s after the fault: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finishFault waits for the job, closes the books of calls cut by the fault,
// checks every invariant and prints the fault's summary line.
func (r *stack) finishFault(name, id string, n int, faultAt time.Time, workers ...*worker) {
	r.t.Helper()
	reachable(r.t, r.direct, 60*time.Second)
	if p := r.waitDone(id, 90*time.Second); p.state != "completed" {
		r.t.Fatalf("job %s after the fault, want completed", p.state)
	}
	r.expireReservations() // calls whose worker lost their settlement to the fault
	f := r.check(id, n)
	requireRows(r.t, f)
	requireMoney(r.t, f)
	progress := "no row finished after the fault"
	if first, ok := storetest.FirstFinishedAfter(r.t, r.direct, id, faultAt); ok {
		progress = first.Sub(faultAt).Round(10*time.Millisecond).String() + " from the fault to the first row finished after it"
	}
	cut := r.st.CutCommits()
	for _, w := range workers {
		cut += w.st.CutCommits()
	}
	r.t.Logf("%s: %d rows, %d lost, %d double-charged, spent %d vs billed %d; %s; %d writes had their answer cut and their outcome read back",
		name, f.Expected, f.Lost, f.DoubleCharged, f.Settled+f.Unknown, f.Vendor, progress, cut)
}

// A primary with a synchronous standby (pg_basebackup -R; the standby in
// synchronous_standby_names, synchronous_commit on) is stopped at once
// (pg_ctl stop -m immediate) mid-job, and the standby promoted (pg_ctl
// promote). Every process reaches Postgres through pgx's multi-host URL with
// target_session_attrs=read-write, and finds the new primary by itself;
// statements cut by the failover are run again or found committed.
func TestPostgresFailoverMidJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby of its own: not in -short")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	primary, err := rig.StartPrimary(ctx, "standby1")
	skipWithoutEngine(t, err)
	t.Cleanup(primary.Close)
	standby, err := primary.StartStandby(ctx, "standby1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.Close)
	if err := primary.WaitSynchronous(ctx, "standby1"); err != nil {
		t.Fatal(err)
	}
	if err := primary.CreateDatabase(ctx, "enrichq"); err != nil {
		t.Fatal(err)
	}
	dbURL := rig.MultiHostURL("enrichq", primary, standby)
	migrate(t, dbURL, "")
	r := engineRig(t, dbURL)
	if !r.st.CheckReplication(ctx, r.log) {
		t.Fatal("the primary does not keep commits on its synchronous standby")
	}

	const n = 400
	var faultAt time.Time
	var promoteTook time.Duration
	failedOver := r.atVendorCall(n/2, func() { // about a quarter into the job's 800 calls
		faultAt = time.Now()
		if err := primary.StopImmediate(ctx); err != nil {
			t.Error(err)
			return
		}
		if err := standby.Promote(ctx); err != nil {
			t.Error(err)
		}
		promoteTook = time.Since(faultAt)
	})
	id := r.submit(rows("fo", n))
	w1, w2 := r.startWorker(workerConfig{}), r.startWorker(workerConfig{})
	r.await(failedOver, 60*time.Second, "the failover")
	t.Logf("primary stopped (immediate) and standby promoted in %s", promoteTook.Round(time.Millisecond))
	r.finishFault("postgres-failover", id, n, faultAt, w1, w2)
}

// The whole pipeline runs through PgBouncer 1.18 in transaction mode
// (pool_mode = transaction; no protocol-level prepared statements) with
// pgx's default_query_exec_mode=cache_describe: submits (COPY), claims,
// reservations, saves, the sweeps and the scheduler's lease. Migrations go
// over a direct connection (ENRICHQ_MIGRATE_DATABASE_URL). Mid-job
// PgBouncer is killed (SIGKILL: every client connection cut mid-statement)
// and started again on its port.
func TestPipelineThroughPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PgBouncer of its own: not in -short")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	direct := storetest.ServerURL(t, "postgres")
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host += ":5432"
	}
	bouncer, err := rig.StartPgBouncer(ctx, host)
	skipWithoutEngine(t, err)
	t.Cleanup(bouncer.Close)
	// A database of its own, empty, migrated over the direct URL while the
	// store's own URL is PgBouncer's.
	name := "enrichq_bouncer_" + strings.ReplaceAll(jobstest.RandomName(""), "-", "_")
	if err := storetest.CreateDatabase(ctx, direct, name, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = storetest.DropDatabase(context.Background(), direct, name) })
	pooled := bouncer.URL(name, "default_query_exec_mode=cache_describe")
	migrate(t, pooled, storetest.ServerURL(t, name))
	r := engineRig(t, pooled)

	// The scheduler's own loop, with its lease, beside the rig's sweeps.
	mctx, stop := context.WithCancel(context.Background())
	led := make(chan error, 1)
	go func() {
		m := maintenance.NewMaintainer(r.st, r.log, maintenance.Services(r.st, r.enq, maintenance.Settings{Interval: 50 * time.Millisecond}, r.log)...)
		led <- m.Run(mctx)
	}()
	t.Cleanup(func() { stop(); <-led })

	const n = 400
	var faultAt time.Time
	killed := r.atVendorCall(n/2, func() {
		faultAt = time.Now()
		bouncer.Kill()
		time.Sleep(300 * time.Millisecond)
		if err := bouncer.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	id := r.submit(rows("pgb", n))
	w1, w2 := r.startWorker(workerConfig{}), r.startWorker(workerConfig{})
	r.await(killed, 60*time.Second, "PgBouncer killed and started again")
	r.finishFault("pgbouncer-kill", id, n, faultAt, w1, w2)

	// The scheduler's lease is held through PgBouncer: another holder is
	// refused while the running loop renews it.
	probe := r.st.NewLease("scheduler", "probe", time.Minute, nil)
	if held, err := probe.Hold(ctx); err != nil || held {
		t.Fatalf("a second holder took the scheduler's lease (%v, %v): the running scheduler does not hold it through PgBouncer", held, err)
	}
}

// migrate applies the migrations to the database of dbURL, over migrateURL
// when given (ENRICHQ_MIGRATE_DATABASE_URL).
func migrate(t *testing.T, dbURL, migrateURL string) {
	t.Helper()
	st, err := store.Open(context.Background(), dbURL, store.Options{MigrateURL: migrateURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
