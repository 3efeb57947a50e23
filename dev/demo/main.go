// Command demo runs enrichq end to end on this machine: it starts the fake
// vendor, the API, a worker and the scheduler (from -bin), uploads a list of
// companies with a role, shows progress while it polls, and prints a
// summary. With -waterfall it runs three fake vendors instead and prints what
// the waterfall spent and matched beside each vendor alone (waterfall.go). With -api it drives an already running stack instead (the
// docker-compose "demo" service does that).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type options struct {
	bin        string
	apiURL     string
	apiKey     string
	rows       int
	roles      string
	lookups    string
	budget     int64
	vendorRPS  float64
	latency    time.Duration
	bulk       bool
	timeout    time.Duration
	logDir     string
	vendorURL  string // for the summary's vendor figures
	miniredis  bool
	resultsOut string
	stay       bool
	waterfall  bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the api, worker, scheduler and fakevendor binaries")
	fs.StringVar(&o.apiURL, "api", "", "drive an already running API at this URL instead of starting processes")
	fs.StringVar(&o.apiKey, "key", "demo-key-0001", "API key (with -api; otherwise the demo's own)")
	fs.StringVar(&o.vendorURL, "vendor", "", "with -api: the fake vendor's URL, for its billing figures")
	fs.IntVar(&o.rows, "rows", 200, "companies in the sample list")
	fs.StringVar(&o.roles, "roles", "VP Sales", "role titles to look up at each company, comma-separated")
	fs.StringVar(&o.lookups, "lookups", "profile,email", "stages to run")
	fs.Int64Var(&o.budget, "budget", 5000, "credit budget of the job")
	fs.Float64Var(&o.vendorRPS, "vendor-rps", 10, "the fake vendor's rate limit (requests/s)")
	fs.DurationVar(&o.latency, "vendor-latency", 300*time.Millisecond, "the fake vendor's latency")
	fs.BoolVar(&o.bulk, "bulk", true, "use the vendor's bulk endpoint")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.StringVar(&o.logDir, "logs", ".data/demo", "where the processes' logs and the results go")
	fs.BoolVar(&o.miniredis, "miniredis", true, "when REDIS_URL does not answer, run an in-process Redis (miniredis)")
	fs.BoolVar(&o.stay, "stay", false, "after the summary, keep everything running for the web page until interrupted")
	fs.BoolVar(&o.waterfall, "waterfall", false, "run three fake vendors (seed, pdl, hunter) and print what the waterfall (auto) spent and matched beside each vendor alone (-rows people)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	interrupted := ctx.Done()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		return err
	}
	o.resultsOut = filepath.Join(o.logDir, "results.csv")
	if o.waterfall {
		if o.apiURL != "" {
			return errors.New("-waterfall starts its own stacks: not with -api")
		}
		return runWaterfall(ctx, o, getenv, stdout)
	}

	if o.apiURL == "" {
		stack, err := startStack(ctx, o, getenv, stdout)
		if err != nil {
			return err
		}
		defer stack.stop(stdout)
		o.apiURL, o.apiKey, o.vendorURL = stack.apiURL, stack.apiKey, stack.vendorURL
	}
	// The web page (docs/web.md) is served by the API: sign in with its key.
	fmt.Fprintf(stdout, "web page: %s/ (sign in with the API key %s)\n", o.apiURL, o.apiKey)
	if err := drive(ctx, o, stdout); err != nil {
		return err
	}
	if o.stay {
		fmt.Fprintf(stdout, "still running for the web page at %s/ (key %s); Ctrl-C stops everything\n", o.apiURL, o.apiKey)
		<-interrupted
	}
	return nil
}

// stack is the processes the demo started.
type stack struct {
	procs     []*exec.Cmd
	names     []string
	apiURL    string
	apiKey    string
	vendorURL string
	logDir    string
	redis     *miniredis.Miniredis
}

func startStack(ctx context.Context, o options, getenv func(string) string, stdout io.Writer) (*stack, error) {
	s := &stack{apiKey: "demo-key-0001", logDir: o.logDir}
	dbURL := or(getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable")
	redisURL := or(getenv("REDIS_URL"), "redis://127.0.0.1:6379/0")
	if !reachable(redisURL) {
		if !o.miniredis {
			return nil, fmt.Errorf("redis at %s does not answer (run `make services`)", redisURL)
		}
		mr, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("start in-process redis: %w", err)
		}
		s.redis = mr
		redisURL = "redis://" + mr.Addr() + "/0"
		fmt.Fprintf(stdout, "redis: none at the configured address; using an in-process one at %s\n", mr.Addr())
	}
	queue := fmt.Sprintf("enrichq-demo-%d", time.Now().UnixNano())
	vendorKey := "demo-vendor-key"
	base := append(os.Environ(),
		"DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "ENRICHQ_QUEUE="+queue, "ENRICHQ_LOG_FORMAT=json",
	)
	if s.redis != nil { // miniredis tells no maxmemory-policy, and never evicts
		base = append(base, "ENRICHQ_REDIS_ALLOW_EVICTION=true")
	}

	vendorURL, err := s.start(ctx, o.bin, "fakevendor", base, "fakevendor listening on ",
		"-addr", "127.0.0.1:0", "-keys", vendorKey, "-rps", fmt.Sprint(o.vendorRPS), "-burst", "2", "-latency", o.latency.String())
	if err != nil {
		s.stop(stdout)
		return nil, err
	}
	s.vendorURL = vendorURL
	env := append(base, "ENRICHQ_VENDOR_URL="+vendorURL, "ENRICHQ_VENDOR_KEY="+vendorKey,
		fmt.Sprintf("ENRICHQ_VENDOR_RPS=%g", o.vendorRPS), fmt.Sprintf("ENRICHQ_VENDOR_BULK=%v", o.bulk),
		// A tenant of its own per run: the answers cached by an earlier run (reused for the
		// same tenant within max_age) would otherwise make this run free and instant.
		fmt.Sprintf("ENRICHQ_API_KEYS=demo-%d:%s", time.Now().Unix(), s.apiKey), "ENRICHQ_API_ADDR=127.0.0.1:0")
	// The API migrates first, alone; the others find the schema in place.
	apiURL, err := s.start(ctx, o.bin, "api", env, "api listening on ")
	if err != nil {
		s.stop(stdout)
		return nil, err
	}
	s.apiURL = apiURL
	for _, name := range []string{"worker", "scheduler"} {
		if _, err := s.start(ctx, o.bin, name, env, name+" started"); err != nil {
			s.stop(stdout)
			return nil, err
		}
	}
	fmt.Fprintf(stdout, "started: fake vendor %s (%g req/s, %s latency), api %s, worker, scheduler; logs in %s\n",
		vendorURL, o.vendorRPS, o.latency, apiURL, o.logDir)
	return s, nil
}

// start runs one binary, logs to a file, and waits for its ready line on
// stdout; it returns what follows the ready prefix (an address).
func (s *stack) start(ctx context.Context, bin, name string, env []string, ready string, args ...string) (string, error) {
	path := filepath.Join(bin, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make dev` first", name, bin)
	}
	logf, err := os.Create(filepath.Join(s.logDir, name+".log"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	s.names = append(s.names, name)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), ready) {
				lines <- strings.TrimSpace(strings.TrimPrefix(sc.Text(), ready))
			}
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			return "", fmt.Errorf("%s exited before it was ready; see %s", name, logf.Name())
		}
		return line, nil
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("%s not ready after 30s; see %s", name, logf.Name())
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// stop sends SIGTERM to every process, newest first, and waits for them.
func (s *stack) stop(stdout io.Writer) {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.Process.Kill()
			fmt.Fprintf(stdout, "%s did not stop within 20s: killed\n", s.names[i])
		}
	}
	if s.redis != nil {
		s.redis.Close()
	}
}

type jobStatus struct {
	ID          string         `json:"id"`
	State       string         `json:"state"`
	StateReason string         `json:"state_reason"`
	Rows        map[string]int `json:"rows"`
	Credits     struct {
		Budget   *int64 `json:"budget"`
		Reserved int64  `json:"reserved"`
		Spent    int64  `json:"spent"`
	} `json:"credits"`
	Progress   float64  `json:"progress"`
	ETASeconds *float64 `json:"eta_seconds"`
}

// waitReady polls /readyz until the API answers 200 (it may still be migrating).
func waitReady(ctx context.Context, apiURL string) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("api at %s not ready: %w", apiURL, ctx.Err())
		case <-tick.C:
		}
	}
}

func drive(ctx context.Context, o options, stdout io.Writer) error {
	if err := waitReady(ctx, o.apiURL); err != nil {
		return err
	}
	csv := sampleCSV(o.rows)
	q := url.Values{"name": {"Demo: " + fmt.Sprint(o.rows) + " companies"}, "roles": {o.roles}, "lookups": {o.lookups},
		"budget_credits": {fmt.Sprint(o.budget)}}
	start := time.Now()
	var st jobStatus
	if err := call(ctx, o, http.MethodPost, "/v1/jobs?"+q.Encode(), "text/csv", csv, &st); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	fmt.Fprintf(stdout, "submitted job %s: %d companies x roles %q, lookups %s, budget %d credits\n", st.ID, o.rows, o.roles, o.lookups, o.budget)

	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastKey, lastPrint := "", time.Time{}
	for {
		if err := call(ctx, o, http.MethodGet, "/v1/jobs/"+st.ID, "", nil, &st); err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		// A line when something moved, or every 2s while waiting.
		key := fmt.Sprint(st.State, st.Rows, st.Credits.Spent)
		if key != lastKey || time.Since(lastPrint) >= 2*time.Second {
			fmt.Fprintln(stdout, progressLine(st, time.Since(start)))
			lastKey, lastPrint = key, time.Now()
		}
		if st.State == "completed" || st.State == "canceled" || st.State == "failed" || st.State == "paused" {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s not finished in time (state %s): %w", st.ID, st.State, ctx.Err())
		case <-tick.C:
		}
	}
	took := time.Since(start)

	var results bytes.Buffer
	if err := callRaw(ctx, o, http.MethodGet, "/v1/jobs/"+st.ID+"/results?format=csv", &results); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.WriteFile(o.resultsOut, results.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "job %s %s in %.1fs%s\n", st.ID, st.State, took.Seconds(), reason(st.StateReason))
	total := 0
	for _, n := range st.Rows {
		total += n
	}
	fmt.Fprintf(stdout, "  rows:    %d total: %d matched, %d no_match, %d failed, %d skipped, %d still open\n", st.Rows["total"],
		st.Rows["matched"], st.Rows["no_match"], st.Rows["failed"], st.Rows["skipped"],
		st.Rows["pending"]+st.Rows["in_flight"]+st.Rows["retry_wait"])
	budget := "none"
	if st.Credits.Budget != nil {
		budget = fmt.Sprint(*st.Credits.Budget)
	}
	fmt.Fprintf(stdout, "  credits: %d spent (budget %s)\n", st.Credits.Spent, budget)
	if o.vendorURL != "" {
		if billed, calls, err := vendorFigures(ctx, o.vendorURL); err == nil {
			fmt.Fprintf(stdout, "  vendor:  %d billed calls, %d credits billed (enrichq's ledger: %d)\n", calls, billed, st.Credits.Spent)
		}
	}
	fmt.Fprintf(stdout, "  results: %s (also GET %s/v1/jobs/%s/results?format=csv|ndjson|json)\n", o.resultsOut, o.apiURL, st.ID)
	fmt.Fprintf(stdout, "           Postgres tables job_rows, profile_results, email_results, phone_results, no_matches (job_id = '%s')\n", st.ID)
	if st.State != "completed" {
		return fmt.Errorf("job ended %s", st.State)
	}
	return nil
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

func progressLine(st jobStatus, elapsed time.Duration) string {
	done := st.Rows["matched"] + st.Rows["no_match"] + st.Rows["failed"] + st.Rows["skipped"]
	eta := "?"
	if st.ETASeconds != nil {
		eta = fmt.Sprintf("%.0fs", *st.ETASeconds)
	}
	return fmt.Sprintf("  [%5.1fs] %-9s %3.0f%%  %d/%d rows done (matched %d, no_match %d, failed %d), in flight %d, retry %d, credits %d, eta %s",
		elapsed.Seconds(), st.State, st.Progress*100, done, st.Rows["total"], st.Rows["matched"], st.Rows["no_match"], st.Rows["failed"],
		st.Rows["in_flight"], st.Rows["retry_wait"], st.Credits.Spent, eta)
}

// sampleCSV is a deterministic list of companies, with a CRM id column
// that enrichq keeps and echoes.
func sampleCSV(n int) []byte {
	prefixes := []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne"}
	suffixes := []string{"GmbH", "AG", "Inc", "Ltd", "SA", "BV"}
	var b bytes.Buffer
	b.WriteString("ref,company,crm_owner\n")
	for i := range n {
		fmt.Fprintf(&b, "crm-%04d,%s %s %d,owner-%d\n", i+1, prefixes[i%len(prefixes)], suffixes[i%len(suffixes)], i+1, i%7)
	}
	return b.Bytes()
}

func call(ctx context.Context, o options, method, path, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, o.apiURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.apiKey)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, out)
}

func callRaw(ctx context.Context, o options, method, path string, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, method, o.apiURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	_, err = io.Copy(out, resp.Body)
	return err
}

// vendorFigures is what the fake vendor billed, an error when it shows nothing.
func vendorFigures(ctx context.Context, vendorURL string) (billed, calls int64, err error) {
	billed, calls, err = fakeBilled(ctx, vendorURL)
	if err == nil && billed == 0 && calls == 0 {
		err = errors.New("no figures")
	}
	return billed, calls, err
}

// reachable reports whether a TCP connection to the URL's host opens.
func reachable(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	c, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
