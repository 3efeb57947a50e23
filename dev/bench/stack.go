package main

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The benchmark runs the real binaries from -bin (the fake vendor, the API,
// a worker, the scheduler) as separate processes, as production runs them:
// each has its own heap, garbage collector and connection pool, they talk over
// real HTTP, Redis and Postgres, and each one's peak RSS (VmHWM) can be read
// from /proc. The driver (uploads, polls, baselines) stays in this process,
// so its own work never shows in their figures or profiles.

// vendorSpec is how the fake vendor behaves in one scenario.
type vendorSpec struct {
	rps     float64 // 0: unlimited
	burst   int
	latency time.Duration
}

// stackSpec is what one scenario starts.
type stackSpec struct {
	name      string // scenario name, for logs and databases
	vendor    *vendorSpec
	worker    bool
	scheduler bool
	bulk      bool
	rps       float64 // the worker's ENRICHQ_VENDOR_RPS
	burst     int
	pprof     bool
	apiEnv    []string // more environment for the API alone
	moreKeys  []string // more tenant:key pairs of ENRICHQ_API_KEYS
	apiPool   int      // the API's Postgres pool (pool_max_conns); 0: its default
	// vendorsFile, when set, names every vendor (ENRICHQ_VENDORS_FILE): no
	// ENRICHQ_VENDOR_* and no fake vendor of the stack's own; env holds the
	// keys its key_env entries name.
	vendorsFile string
	env         []string
}

// proc is one started process.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// stack is the processes and the database of one scenario run.
type stack struct {
	b         *bench
	procs     []*proc
	dbName    string
	dbURL     string
	queue     string
	tenant    string
	apiKey    string
	apiURL    string
	vendorURL string
	vendorKey string
	pprofURL  string // the worker's /debug/pprof/ root, when spec.pprof
	apiPprof  string // the API's, when its environment sets ENRICHQ_METRICS_ADDR
	logDir    string
	stopped   bool
	rss       map[string]int64 // peak RSS in KiB by process, read when it stops
}

// startStack creates a database and starts the processes of spec.
func (b *bench) startStack(ctx context.Context, spec stackSpec) (*stack, error) {
	b.runSeq++
	id := fmt.Sprintf("%s_%s_%d", b.runID, strings.ReplaceAll(spec.name, "-", "_"), b.runSeq)
	s := &stack{
		b:         b,
		dbName:    "enrichq_bench_" + id,
		queue:     "enrichq-bench-" + id,
		tenant:    "bench-" + id,
		apiKey:    "bench-key-" + id,
		vendorKey: "bench-vendor-key",
		logDir:    filepath.Join(b.opts.logDir, fmt.Sprintf("%02d-%s", b.runSeq, spec.name)),
		rss:       map[string]int64{},
	}
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if s.dbURL, err = b.createDatabase(ctx, s.dbName); err != nil {
		return nil, err
	}
	env := append(os.Environ(),
		"DATABASE_URL="+s.dbURL, "REDIS_URL="+b.opts.redisURL, "ENRICHQ_QUEUE="+s.queue,
		"ENRICHQ_LOG_FORMAT=json", "ENRICHQ_LOG_LEVEL="+b.opts.logLevel,
		"ENRICHQ_API_KEYS="+strings.Join(append([]string{s.tenant + ":" + s.apiKey}, spec.moreKeys...), ","), "ENRICHQ_API_ADDR=127.0.0.1:0",
	)
	if spec.vendorsFile != "" {
		env = append(append(env, "ENRICHQ_VENDORS_FILE="+spec.vendorsFile), spec.env...)
	} else {
		env = append(env, "ENRICHQ_VENDOR_KEY="+s.vendorKey,
			fmt.Sprintf("ENRICHQ_VENDOR_BULK=%v", spec.bulk),
			fmt.Sprintf("ENRICHQ_VENDOR_RPS=%g", max(spec.rps, 0.01)),
			fmt.Sprintf("ENRICHQ_VENDOR_BURST=%d", max(spec.burst, 1)))
	}
	// The worker and the fake vendor run at GOGC=400 unless GOGC is set, as
	// docker-compose.yml runs them (docs/configuration.md): a chunk's garbage
	// is short-lived and the fake shares the machine's cores with the pipeline.
	withGC := func(env []string) []string {
		env = append([]string(nil), env...)
		if os.Getenv("GOGC") == "" {
			env = append(env, "GOGC=400")
		}
		return env
	}
	if spec.vendor != nil {
		v := spec.vendor
		args := []string{"-addr", "127.0.0.1:0", "-keys", s.vendorKey, "-rps", fmt.Sprint(v.rps), "-burst", fmt.Sprint(v.burst),
			"-latency", v.latency.String(), "-log-level", "warn"}
		if s.vendorURL, err = s.start(ctx, "fakevendor", withGC(env), "fakevendor listening on ", args...); err != nil {
			s.stop()
			return nil, err
		}
		env = append(env, "ENRICHQ_VENDOR_URL="+s.vendorURL)
	} else if spec.vendorsFile == "" {
		env = append(env, "ENRICHQ_VENDOR_URL=http://127.0.0.1:9") // the worker requires one; it is not started
	}
	apiEnv := append(append([]string(nil), env...), spec.apiEnv...)
	if spec.apiPool > 0 {
		sep := "?"
		if strings.Contains(s.dbURL, "?") {
			sep = "&"
		}
		apiEnv = append(apiEnv, fmt.Sprintf("DATABASE_URL=%s%spool_max_conns=%d", s.dbURL, sep, spec.apiPool))
	}
	// The API migrates the fresh database first, alone; the others find the schema in place.
	if s.apiURL, err = s.start(ctx, "api", apiEnv, "api listening on "); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.liftLimits(ctx); err != nil {
		s.stop()
		return nil, err
	}
	if spec.worker {
		wenv := withGC(env)
		if spec.pprof {
			wenv = append(wenv, "ENRICHQ_METRICS_ADDR=127.0.0.1:0")
		}
		if _, err := s.start(ctx, "worker", wenv, "worker started"); err != nil {
			s.stop()
			return nil, err
		}
	}
	if spec.scheduler {
		if _, err := s.start(ctx, "scheduler", env, "scheduler started"); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// start runs one binary with its stderr in a log file and waits for its ready
// line on stdout; it returns what follows the ready prefix (an address).
func (s *stack) start(ctx context.Context, name string, env []string, ready string, args ...string) (string, error) {
	path := filepath.Join(s.b.opts.bin, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make dev` (or `make bench`) first", name, s.b.opts.bin)
	}
	logPath := filepath.Join(s.logDir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // a restarted worker appends
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return "", err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	s.procs = append(s.procs, p)
	lines := make(chan string, 1)
	pprofLine := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, name+" metrics on "); ok { // /debug/pprof/ is beside /metrics
				pprofLine <- strings.TrimSuffix(strings.TrimSpace(a), "/metrics")
			}
			if !sent && strings.HasPrefix(line, ready) {
				lines <- strings.TrimSpace(strings.TrimPrefix(line, ready))
				sent = true
			}
		}
		if !sent {
			close(lines)
		}
	}()
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			return "", fmt.Errorf("%s exited before it was ready; see %s", name, logPath)
		}
		select {
		case a := <-pprofLine:
			switch name {
			case "api":
				s.apiPprof = a
			case "worker":
				s.pprofURL = a
			}
		default:
		}
		return line, nil
	case <-time.After(60 * time.Second):
		return "", fmt.Errorf("%s not ready after 60s; see %s", name, logPath)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pid returns the process id of a started process, 0 if none.
func (s *stack) pid(name string) int {
	for _, p := range s.procs {
		if p.name == name && p.cmd.Process != nil {
			return p.cmd.Process.Pid
		}
	}
	return 0
}

// peakRSS reads VmHWM (peak resident set, KiB) of a running process.
func peakRSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// cpuTime is the CPU time (user and system) a process has used so far; 0
// when it cannot be read. On a loaded machine it measures a process's own
// work where its wall-clock time measures the queue for the CPUs.
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis: utime and stime are the
	// 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// stop records each process's peak RSS, stops them (SIGTERM, newest first),
// deletes the queue's keys and, unless -keep, the database.
func (s *stack) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	for _, p := range s.procs {
		if rss := peakRSS(p.cmd.Process.Pid); rss > 0 {
			s.rss[p.name] = rss
		}
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(40 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			s.b.logf("%s did not stop within 40s: killed", p.name)
		}
	}
	if s.dbName == "" { // processes alone (the waterfall's fakes)
		return
	}
	s.b.deleteQueue(s.queue)
	if !s.b.opts.keep {
		if err := s.b.dropDatabase(context.Background(), s.dbName); err != nil {
			s.b.logf("drop database %s: %v", s.dbName, err)
		}
	}
}

// serverURL is the Postgres server of DATABASE_URL with database db.
func (b *bench) serverURL(db string) (string, error) {
	u, err := url.Parse(b.opts.databaseURL)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/" + db
	return u.String(), nil
}

// createDatabase creates an empty database (the API migrates it) and returns its URL.
func (b *bench) createDatabase(ctx context.Context, name string) (string, error) {
	admin, err := b.serverURL("postgres")
	if err != nil {
		return "", err
	}
	if err := storetest.CreateDatabase(ctx, admin, name, b.opts.locale); err != nil {
		return "", fmt.Errorf("Postgres at %s (run `make services`): %w", redact(admin), err)
	}
	// Every run starts from a checkpoint, so that none pays for the dirty
	// pages the run before it left. Best effort: CHECKPOINT needs superuser
	// or pg_checkpoint.
	if err := storetest.Checkpoint(ctx, admin); err != nil {
		b.logf("no CHECKPOINT before the run (%v): its figures may carry the last run's writes", err)
	}
	if waited := settle(ctx, b.opts.settle); waited > 2*time.Second {
		b.logf("waited %.0f s for the machine to be quiet before the run", waited.Seconds())
	}
	return b.serverURL(name)
}

func (b *bench) dropDatabase(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	admin, err := b.serverURL("postgres")
	if err != nil {
		return err
	}
	return storetest.DropDatabase(ctx, admin, name)
}

// redact hides a password in a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return u.Redacted()
}
