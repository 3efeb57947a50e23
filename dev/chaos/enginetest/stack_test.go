package enginetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// binDir holds the binaries built once for the package's tests.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// binaries builds api, worker and scheduler once, with the race detector
// when the test has it (make test: the packages are compiled already, and
// the processes are checked too), and returns their directory. It skips the
// test under -short.
func binaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the real binaries against real engines: not with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "enrichq-enginetest-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		args := []string{"build", "-o", dir + string(os.PathSeparator)}
		if raceBuild {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "../../../cmd/api", "../../../cmd/worker", "../../../cmd/scheduler")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// needBinary skips the test when name is not on PATH, naming the Debian
// package that has it.
func needBinary(t *testing.T, name, debian string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not found on PATH: install it (Debian: apt-get install -y %s)", name, debian)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const apiKey = "enginetest-key-0001"

// stack is enrichq's processes as a deployment runs them, against a
// database of the test's own and an in-process fake vendor.
type stack struct {
	t      *testing.T
	bin    string
	dir    string // logs
	db     *store.Store
	env    []string // every process's environment
	tag    string
	vendor *enrichtest.Seed
	vURL   string
	rps    float64

	calls     atomic.Int64 // vendor requests received
	mu        sync.Mutex
	callTime  []time.Time // when each vendor request was received
	throttled []time.Time // when each 429 was answered
	hookAt    int64
	hook      func()
}

type stackConfig struct {
	redisEnv    []string // REDIS_URL and the Sentinel variables
	vendorRPS   float64  // the vendor key's limit, and the workers' ENRICHQ_VENDOR_RPS
	vendorBurst int      // the vendor's token bucket
	latency     time.Duration
	concurrency int // ENRICHQ_WORKER_CONCURRENCY
}

func newStack(t *testing.T, cfg stackConfig) *stack {
	t.Helper()
	s := &stack{t: t, bin: binaries(t), tag: randomHex(4), rps: cfg.vendorRPS}
	dir, err := os.MkdirTemp("", "enrichq-"+t.Name()+"-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() { // after every process has stopped
		s.checkRaces()
		if t.Failed() {
			t.Logf("the processes' logs are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	dbURL := storetest.NewDatabase(t)
	s.db = storetest.Open(t, dbURL)

	vendorKey := "enginetest-vendor-" + randomHex(6) // the shared limiter's key: one per test
	vopts := enrichtest.DefaultSeedOptions()
	vopts.APIKeys = []string{vendorKey}
	vopts.RPS, vopts.Burst = cfg.vendorRPS, cfg.vendorBurst
	vopts.Latency, vopts.LatencyJitter = cfg.latency, cfg.latency/2
	s.vendor = enrichtest.NewSeed(vopts)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			n := s.calls.Add(1)
			s.mu.Lock()
			s.callTime = append(s.callTime, time.Now())
			hook := s.hook
			if n != s.hookAt {
				hook = nil
			}
			s.mu.Unlock()
			if hook != nil {
				hook()
			}
			rec := &statusRecorder{ResponseWriter: w}
			s.vendor.ServeHTTP(rec, r)
			if rec.status == http.StatusTooManyRequests {
				s.mu.Lock()
				s.throttled = append(s.throttled, time.Now())
				s.mu.Unlock()
			}
			return
		}
		s.vendor.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.vURL = srv.URL

	s.env = append(os.Environ(),
		"DATABASE_URL="+dbURL, "ENRICHQ_MIGRATE=false", // a clone of the migrated template
		"ENRICHQ_QUEUE=enginetest-"+s.tag, "ENRICHQ_LOG_FORMAT=json", "ENRICHQ_LOG_LEVEL=info", "ENRICHQ_SHUTDOWN_TIMEOUT=5s",
		"ENRICHQ_VENDOR_URL="+s.vURL, "ENRICHQ_VENDOR_KEY="+vendorKey, fmt.Sprintf("ENRICHQ_VENDOR_RPS=%g", cfg.vendorRPS),
		"ENRICHQ_VENDOR_BULK=false", // a call per lookup: many calls for the limiter to pace
		fmt.Sprintf("ENRICHQ_WORKER_CONCURRENCY=%d", max(cfg.concurrency, 1)),
		"ENRICHQ_API_KEYS=enginetest-"+s.tag+":"+apiKey, "ENRICHQ_API_ADDR=127.0.0.1:0",
		"ENRICHQ_METRICS_ADDR=", "ENRICHQ_REDIS_SENTINELS=", "ENRICHQ_REDIS_MASTER=",
	)
	s.env = append(s.env, cfg.redisEnv...)
	return s
}

// statusRecorder keeps the status of an answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (resets).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// throttledAt are the times of the vendor's 429s, from start.
func (s *stack) throttledAt(start time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, at := range s.throttled {
		out = append(out, fmt.Sprintf("%.1fs", at.Sub(start).Seconds()))
	}
	return out
}

// onCall runs fault (on the vendor's goroutine) when the vendor receives
// its n-th request: a fault at a call, not at a poll, comes mid-job even
// on a busy machine.
func (s *stack) onCall(n int64, fault func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookAt, s.hook = n, fault
}

// callTimes are when the vendor received each request.
func (s *stack) callTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.callTime...)
}

// start runs one binary until the test ends and returns the rest of its
// ready line.
func (s *stack) start(ctx context.Context, name, binary, ready string) (*rig.Proc, string) {
	s.t.Helper()
	p, line, err := s.tryStart(ctx, name, binary, ready)
	if err != nil {
		s.t.Fatal(err)
	}
	return p, line
}

func (s *stack) tryStart(ctx context.Context, name, binary, ready string) (*rig.Proc, string, error) {
	p, line, err := rig.Start(ctx, rig.ProcSpec{Name: name, Path: filepath.Join(s.bin, binary), Env: s.env,
		Log: filepath.Join(s.dir, name+".log"), Ready: ready, ReadyTimeout: time.Minute})
	if err != nil {
		return nil, "", err
	}
	s.t.Cleanup(func() { p.Stop(10 * time.Second) })
	return p, line, nil
}

// startMany starts n processes of binary at once, named name-1 .. name-n.
func (s *stack) startMany(ctx context.Context, n int, name, binary, ready string) ([]*rig.Proc, []string) {
	s.t.Helper()
	procs, lines, errs := make([]*rig.Proc, n), make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { procs[i], lines[i], errs[i] = s.tryStart(ctx, fmt.Sprintf("%s-%d", name, i+1), binary, ready) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.t.Fatal(err)
		}
	}
	return procs, lines
}

// do makes one request with the test's API key.
func (s *stack) do(ctx context.Context, method, u, ctype string, body []byte) (int, []byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// liftLimits lifts the tenant's default job budget and monthly allowance:
// the test's jobs spend more than a new tenant may.
func (s *stack) liftLimits(ctx context.Context, api string) {
	s.t.Helper()
	if st, body := s.do(ctx, http.MethodPatch, api+"/v1/account", "application/json",
		[]byte(`{"default_job_budget": null, "monthly_allowance": null}`)); st != http.StatusOK {
		s.t.Fatalf("PATCH /v1/account: %d %s", st, body)
	}
}

// submit uploads n profile URLs, each once (a repeat in the vendor's
// ledger is then a second payment), and returns the job's id.
func (s *stack) submit(ctx context.Context, api, name string, n int, budget int64) string {
	s.t.Helper()
	var b bytes.Buffer
	b.WriteString("ref,profile_url\n")
	for i := range n {
		fmt.Fprintf(&b, "%s-%05d,https://platform.example/in/%s-%s-%d\n", name, i, s.tag, name, i)
	}
	q := url.Values{"name": {"enginetest " + name}}
	if budget > 0 {
		q.Set("budget_credits", fmt.Sprint(budget))
	}
	st, data := s.do(ctx, http.MethodPost, api+"/v1/jobs?"+q.Encode(), "text/csv", b.Bytes())
	if st != http.StatusCreated {
		s.t.Fatalf("submit %s: %d %s", name, st, data)
	}
	var js struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &js); err != nil {
		s.t.Fatal(err)
	}
	return js.ID
}

// progress is where a job stands.
type progress struct {
	job      store.Job
	terminal int
	total    int
}

func (s *stack) progress(ctx context.Context, jobID string) (progress, error) {
	job, err := s.db.JobByID(ctx, jobID)
	if err != nil {
		return progress{}, err
	}
	counts, err := s.db.RowCounts(ctx, jobID)
	if err != nil {
		return progress{}, err
	}
	p := progress{job: job}
	for state, n := range counts {
		p.total += n
		if !state.Open() {
			p.terminal += n
		}
	}
	return p, nil
}

// ended: the job is completed, paused, canceled or failed.
func (p progress) ended() bool { return !p.job.State.Runnable() }

// waitEnded waits for the job to end and returns where it stands; on the
// way it calls seen (if not nil) with every reading.
func (s *stack) waitEnded(ctx context.Context, jobID string, within time.Duration, seen func(time.Time, progress)) progress {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		p, err := s.progress(ctx, jobID)
		if err != nil {
			s.t.Fatal(err)
		}
		if seen != nil {
			seen(time.Now(), p)
		}
		if p.ended() {
			return p
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s did not end within %s: %s, %d/%d rows terminal; logs in %s", jobID, within, p.job.State, p.terminal, p.total, s.dir)
		}
		select {
		case <-ctx.Done():
			s.t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReservations waits until no credit reservation is open: every call
// settled (or counted as spent), so that the books can be compared.
func (s *stack) waitReservations(ctx context.Context, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		n, err := s.db.OpenReservations(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d reservations still open after %s", n, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// figures checks one job against the vendor's ledger (expected 0: rows
// are not counted as lost, for a job a budget paused).
func (s *stack) figures(ctx context.Context, jobID string, expected int) rig.Figures {
	s.t.Helper()
	f, err := rig.CheckJob(ctx, s.db, jobID, expected, s.vendor.Ledger())
	if err != nil {
		s.t.Fatal(err)
	}
	return f
}

// summary is the fault's line: rows, lost, double-charged, spent against
// billed.
func summary(f rig.Figures) string {
	return fmt.Sprintf("%s; spent %d, billed %d", f.Line(), f.JobSpent, f.Vendor)
}

// share429 is the vendor's 429 answers over its requests.
func (s *stack) share429() (n429, requests int64) {
	st := s.vendor.Stats()
	return st.ByStatus[http.StatusTooManyRequests], st.Requests
}

// checkRaces fails the test when a process's log reports a data race (the
// binaries have the race detector when the test has it).
func (s *stack) checkRaces() {
	logs, _ := filepath.Glob(filepath.Join(s.dir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err == nil && bytes.Contains(b, []byte("WARNING: DATA RACE")) {
			s.t.Errorf("%s reports a data race:\n%s", filepath.Base(l), b)
		}
	}
}
