package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

const (
	vendorKey = "chaos-vendor-key"
	apiKey    = "chaos-api-key-0001"
	poison    = "POISON"
)

// env is the running system under test.
type env struct {
	o       options
	dir     string
	stamp   string
	dbName  string
	adminDB string       // URL of the server's postgres database, to create and drop ours
	dbURL   string       // our database, direct (for the checks)
	procURL string       // our database through the proxy (for the processes)
	db      *store.Store // direct, for the checks
	proxy   *rig.Proxy

	redis     *rig.Redis
	miniredis *miniredis.Miniredis
	redisURL  string
	rdb       *redis.Client
	queue     string

	vendorURL string
	apiURL    string
	procEnv   []string
	vendor    *rig.Proc
	api       *rig.Proc
	workers   []*rig.Proc
	restarts  []int
	scheduler *rig.Proc
	failed    bool // a check failed: keep the database
}

func setup(ctx context.Context, o options, getenv func(string) string, stdout io.Writer) (*env, error) {
	e := &env{o: o, stamp: time.Now().UTC().Format("20060102t150405")}
	if o.faults[0] == chargedMisses { // after the shared system, maybe in the same second
		e.stamp += "p"
	}
	e.dir = filepath.Join(o.logDir, e.stamp)
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.teardown(stdout)
		}
	}()

	// Postgres: a database of our own on the configured server, reached by
	// the processes through a proxy that can cut them off.
	base := getenv("DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable"
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("DATABASE_URL %q: need a postgres://user@host:port/db URL", base)
	}
	if strings.Contains(u.Host, ",") { // pgx's multi-host form: the proxy stands for one server
		return nil, fmt.Errorf("DATABASE_URL names several hosts (%s): the chaos run cuts one server through its proxy; give it the primary's", u.Host)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	e.dbName = "enrichq_chaos_" + e.stamp
	admin := *u
	admin.Path = "/postgres"
	e.adminDB = admin.String()
	if err := e.createDatabase(ctx); err != nil {
		return nil, err
	}
	direct := *u
	direct.Path = "/" + e.dbName
	e.dbURL = direct.String()
	if e.proxy, err = rig.NewProxy("127.0.0.1:0", target); err != nil {
		return nil, err
	}
	proxied := direct
	proxied.Host = e.proxy.Addr()
	e.procURL = proxied.String()

	// Redis: a private server, so FLUSHALL loses nobody else's data.
	if e.redis, err = rig.StartRedis(ctx, o.redisBin, filepath.Join(e.dir, "redis")); err == nil {
		e.redisURL = e.redis.URL
	} else {
		fmt.Fprintf(stdout, "redis: %v; using an in-process miniredis\n", err)
		if e.miniredis, err = miniredis.Run(); err != nil {
			return nil, err
		}
		e.redisURL = "redis://" + e.miniredis.Addr() + "/0"
	}
	ropt, err := redis.ParseURL(e.redisURL)
	if err != nil {
		return nil, err
	}
	e.rdb = redis.NewClient(ropt)
	e.queue = "chaos"

	bf, _ := parseFaults(o.baseFaults, o.vendorTimeout)
	e.vendorURL, err = e.start(ctx, &e.vendor, "fakevendor", "fakevendor listening on ", os.Environ(),
		"-addr", "127.0.0.1:0", "-keys", vendorKey, "-rps", fmt.Sprint(o.vendorRPS), "-burst", "2",
		"-latency", o.latency.String(), "-latency-jitter", (o.latency / 2).String(),
		"-fail-rate", fmt.Sprint(bf.Fail), "-malformed-rate", fmt.Sprint(bf.Malformed), "-slow-rate", fmt.Sprint(bf.Slow),
		"-slow-delay", bf.SlowDelay, "-reset-rate", fmt.Sprint(bf.Reset), "-seed", fmt.Sprint(o.seed),
		"-reject-substring", poison, fmt.Sprintf("-no-replay-header=%v", o.noReplayHdr), "-prices", o.prices)
	if err != nil {
		return nil, err
	}
	e.procEnv = append(os.Environ(),
		"DATABASE_URL="+e.procURL, "REDIS_URL="+e.redisURL, "ENRICHQ_QUEUE="+e.queue, "ENRICHQ_LOG_FORMAT=json", "ENRICHQ_LOG_LEVEL=info",
		"ENRICHQ_SHUTDOWN_TIMEOUT="+o.shutdownTimeout.String(),
		"ENRICHQ_VENDOR_URL="+e.vendorURL, "ENRICHQ_VENDOR_KEY="+vendorKey, fmt.Sprintf("ENRICHQ_VENDOR_RPS=%g", o.vendorRPS),
		"ENRICHQ_VENDOR_BURST=2", fmt.Sprintf("ENRICHQ_VENDOR_BULK=%v", o.bulk), "ENRICHQ_VENDOR_TIMEOUT="+o.vendorTimeout.String(),
		"ENRICHQ_API_KEYS=chaos-"+e.stamp+":"+apiKey, "ENRICHQ_API_ADDR=127.0.0.1:0", "ENRICHQ_MIGRATE=true",
	)
	if e.miniredis != nil { // it tells no maxmemory-policy, and never evicts
		e.procEnv = append(e.procEnv, "ENRICHQ_REDIS_ALLOW_EVICTION=true")
	}
	// The API migrates first, alone; the others find the schema in place.
	if e.apiURL, err = e.start(ctx, &e.api, "api", "api listening on ", e.procEnv); err != nil {
		return nil, err
	}
	e.workers = make([]*rig.Proc, 2)
	e.restarts = make([]int, 2)
	for i := range e.workers {
		if err := e.startWorker(ctx, i); err != nil {
			return nil, err
		}
	}
	if _, err := e.start(ctx, &e.scheduler, "scheduler", "scheduler started", e.procEnv); err != nil {
		return nil, err
	}
	if e.db, err = store.Open(ctx, e.dbURL, store.Options{MaxConns: 4}); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, e.apiURL, 30*time.Second); err != nil {
		return nil, err
	}
	// The rig's jobs spend more than a tenant's default allowance (docs/money.md).
	if st, body, err := httpDo(ctx, http.MethodPatch, e.apiURL+"/v1/account", "application/json", []byte(noLimits),
		map[string]string{"Authorization": "Bearer " + apiKey}, 15*time.Second); err != nil || st != http.StatusOK {
		return nil, fmt.Errorf("lifting the tenant's limits: %d %s %v", st, body, err)
	}
	redisKind := "private redis-server " + e.redisURL
	if e.miniredis != nil {
		redisKind = "in-process miniredis " + e.redisURL
	}
	fmt.Fprintf(stdout, "chaos: fake vendor %s (%g req/s, %s latency; faults: %s; %s prices; replay header %v), api %s, 2 workers, scheduler\n",
		e.vendorURL, o.vendorRPS, o.latency, bf, o.prices, !o.noReplayHdr, e.apiURL)
	fmt.Fprintf(stdout, "chaos: database %s through proxy %s, %s; lease %s, vendor timeout %s, bulk %v; logs in %s\n",
		e.dbName, e.proxy.Addr(), redisKind, jobs.DefaultLease, o.vendorTimeout, o.bulk, e.dir)
	ok = true
	return e, nil
}

// start runs one binary and waits for its ready line.
func (e *env) start(ctx context.Context, slot **rig.Proc, name, ready string, env []string, args ...string) (string, error) {
	p, line, err := rig.Start(ctx, rig.ProcSpec{Name: name, Path: filepath.Join(e.o.bin, name), Args: args, Env: env,
		Log: filepath.Join(e.dir, name+".log"), Ready: ready})
	if err != nil {
		return "", err
	}
	*slot = p
	return line, nil
}

// startWorker starts (or restarts) worker i.
func (e *env) startWorker(ctx context.Context, i int) error {
	p, _, err := rig.Start(ctx, rig.ProcSpec{Name: fmt.Sprintf("worker-%d", i+1), Path: filepath.Join(e.o.bin, "worker"),
		Env: e.procEnv, Log: filepath.Join(e.dir, fmt.Sprintf("worker-%d.log", i+1)), Ready: "worker started"})
	if err != nil {
		return err
	}
	e.workers[i] = p
	return nil
}

func (e *env) createDatabase(ctx context.Context) error {
	if err := storetest.CreateDatabase(ctx, e.adminDB, e.dbName, ""); err != nil {
		return fmt.Errorf("Postgres at DATABASE_URL's server (run `make services`): %w", err)
	}
	return nil
}

func (e *env) dropDatabase() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return storetest.DropDatabase(ctx, e.adminDB, e.dbName)
}

// teardown stops everything it started, newest first.
func (e *env) teardown(stdout io.Writer) {
	bound := e.o.shutdownTimeout + 10*time.Second
	for _, p := range []*rig.Proc{e.scheduler} {
		if p != nil {
			p.Stop(bound)
		}
	}
	for _, p := range e.workers {
		if p != nil {
			p.Stop(bound)
		}
	}
	if e.api != nil {
		e.api.Stop(bound)
	}
	if e.vendor != nil {
		e.vendor.Stop(bound)
	}
	if e.db != nil {
		e.db.Close()
	}
	if e.rdb != nil {
		e.rdb.Close()
	}
	if e.redis != nil {
		e.redis.Stop()
	}
	if e.miniredis != nil {
		e.miniredis.Close()
	}
	if e.proxy != nil {
		_ = e.proxy.Close()
	}
	if e.dbName == "" || e.adminDB == "" {
		return
	}
	if e.o.keep || e.failed {
		fmt.Fprintf(stdout, "chaos: database %s kept for inspection (DROP DATABASE %s when done)\n", e.dbName, e.dbName)
		return
	}
	if err := e.dropDatabase(); err != nil {
		fmt.Fprintf(stdout, "chaos: drop database %s: %v\n", e.dbName, err)
	}
}

// noLimits lifts a tenant's default job budget and monthly allowance.
const noLimits = `{"default_job_budget": null, "monthly_allowance": null}`

// waitReady polls /readyz until 200.
func waitReady(ctx context.Context, apiURL string, within time.Duration) error {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if st, _, err := httpDo(ctx, http.MethodGet, apiURL+"/readyz", "", nil, nil, 5*time.Second); err == nil && st == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("api at %s not ready after %s", apiURL, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// httpDo makes one request and returns the status and body.
func httpDo(ctx context.Context, method, u, ctype string, body []byte, header map[string]string, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, data, err
}

// setVendorFaults changes the fake vendor's faults (POST /_fake/faults).
func (e *env) setVendorFaults(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	st, data, err := httpDo(ctx, http.MethodPost, e.vendorURL+"/_fake/faults", "application/json", b, nil, 5*time.Second)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("POST /_fake/faults: %d %s", st, strings.TrimSpace(string(data)))
	}
	return nil
}

// vendorStats reads GET /_fake/stats.
func (e *env) vendorStats(ctx context.Context) (vendorStatsBody, error) {
	var s vendorStatsBody
	st, data, err := httpDo(ctx, http.MethodGet, e.vendorURL+"/_fake/stats", "", nil, nil, 5*time.Second)
	if err != nil {
		return s, err
	}
	if st != http.StatusOK {
		return s, errors.New("GET /_fake/stats: " + http.StatusText(st))
	}
	return s, json.Unmarshal(data, &s)
}

type vendorStatsBody struct {
	Requests int64            `json:"requests"`
	ByStatus map[string]int64 `json:"by_status"`
	Resets   int64            `json:"resets"`
	Replays  int64            `json:"replays"`
}
