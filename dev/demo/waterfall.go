package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The waterfall demo (-waterfall): three fake vendors whose truth differs
// by segment, one list asking profile and email, and the credits and matches
// of the waterfall (auto) beside each vendor alone. The third is an email
// finder (Hunter-shaped): no profile, an email from a name and a domain.
// Every case is its own stack (api, worker, scheduler) with its own vendors
// file, on one fresh database; the warm-up and the waterfall share a tenant
// (the learned rates are per tenant), so the warm-up's answers are what the
// measured auto run orders by; each vendor alone has a tenant of its own.

// The fakes' truth and prices: the seed's vendor finds most people at .com
// domains and few at .fr and .de, billing 2 credits per profile search, hit
// or miss; the PDL-shaped one the other way round, billing 1 credit per
// match, a credit worth 3 budget units; the finder finds most emails at
// .de and .com, one search (worth 2 units) per email found, a miss free.
const (
	demoSeedRates   = "com=0.85,fr=0.25,de=0.25"
	demoPDLRates    = "com=0.1,fr=0.8,de=0.8"
	demoHunterRates = "com=0.6,fr=0.3,de=0.9"
	demoPDLValue    = 3
	demoHunterValue = 2
	demoVerifyValue = 1 // a verification's worth, verify_credit_value
)

// demoVendorsFile is the vendors file of a case: every vendor with order
// auto, or one of them alone.
func demoVendorsFile(seedURL, pdlURL, hunterURL string, only string, bulk bool) string {
	var b strings.Builder
	b.WriteString("vendors:\n")
	if only == "" || only == "seed" {
		fmt.Fprintf(&b, "  - name: seed\n    kind: seed\n    url: %s\n    key_env: DEMO_SEED_KEY\n    rate: 200\n    burst: 20\n    bulk: %v\n", seedURL, bulk)
	}
	if only == "" || only == "pdl" {
		fmt.Fprintf(&b, "  - name: pdl\n    kind: pdl\n    url: %s\n    key_env: DEMO_PDL_KEY\n    rate: 200\n    burst: 20\n    bulk: %v\n    credit_value: %d\n", pdlURL, bulk, demoPDLValue)
	}
	if only == "" || only == "hunter" {
		fmt.Fprintf(&b, "  - name: hunter\n    kind: hunter\n    url: %s\n    key_env: DEMO_HUNTER_KEY\n    rate: 15\n    burst: 5\n    credit_value: %d\n    verify_credit_value: %d\n", hunterURL, demoHunterValue, demoVerifyValue)
	}
	if only == "" {
		b.WriteString("order: auto\nexplore: 0.05\n")
	}
	return b.String()
}

// waterfallCase is one run of the list and what it spent and found.
type waterfallCase struct {
	label, only, salt string
	warmUp            bool
	// tenant numbers the case's tenant: the warm-up's is the waterfall's,
	// whose rows order by what the warm-up's taught (rates are per tenant).
	tenant         int
	job            jobStatus
	seedBilled     int64 // the fakes' bills during the run, in their credits
	pdlBilled      int64
	hunterSearches int64 // the finder's searches billed (emails found)
	hunterVerifies int64 // its verifications billed
	// statuses counts the delivered emails by their verdict (email_status),
	// in a case with a verifier (the finder's verify stage).
	statuses map[string]int
	took     time.Duration
}

func runWaterfall(ctx context.Context, o options, getenv func(string) string, stdout io.Writer) error {
	dbBase := or(getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable")
	redisURL := or(getenv("REDIS_URL"), "redis://127.0.0.1:6379/0")
	if !reachable(redisURL) {
		if !o.miniredis {
			return fmt.Errorf("redis at %s does not answer (run `make services`)", redisURL)
		}
		mr, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("start in-process redis: %w", err)
		}
		defer mr.Close()
		redisURL = "redis://" + mr.Addr() + "/0"
	}
	// A database of its own: the learned rates of an earlier run would
	// otherwise order this one.
	run := time.Now().Unix()
	dbName := fmt.Sprintf("enrichq_demo_waterfall_%d", run)
	admin, dbURL, err := withDatabase(dbBase, dbName)
	if err != nil {
		return err
	}
	if err := storetest.CreateDatabase(ctx, admin, dbName, ""); err != nil {
		return fmt.Errorf("create database %s: %w", dbName, err)
	}
	defer func() {
		if err := storetest.DropDatabase(context.WithoutCancel(ctx), admin, dbName); err != nil {
			fmt.Fprintf(stdout, "drop database %s: %v\n", dbName, err)
		}
	}()

	fakes := &stack{logDir: o.logDir}
	defer fakes.stop(stdout)
	seedURL, err := fakes.start(ctx, o.bin, "fakevendor", os.Environ(), "fakevendor listening on ",
		"-addr", "127.0.0.1:0", "-keys", "demo-seed-key", "-profile-hit-rates", demoSeedRates, "-log-level", "warn")
	if err != nil {
		return err
	}
	pdlURL, err := fakes.start(ctx, o.bin, "fakepdl", os.Environ(), "fakepdl listening on ",
		"-addr", "127.0.0.1:0", "-keys", "demo-pdl-key", "-segment-hit-rates", demoPDLRates, "-no-profile-rate", "0")
	if err != nil {
		return err
	}
	hunterURL, err := fakes.start(ctx, o.bin, "fakehunter", os.Environ(), "fakehunter listening on ",
		"-addr", "127.0.0.1:0", "-keys", "demo-hunter-key", "-segment-hit-rates", demoHunterRates)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fakes: seed %s (profile hit rate by TLD %s; 2 credits a search, hit or miss), pdl %s (%s; 1 credit a match, worth %d units), hunter %s (emails by TLD %s; 1 search per email found, worth %d units)\n",
		seedURL, demoSeedRates, pdlURL, demoPDLRates, demoPDLValue, hunterURL, demoHunterRates, demoHunterValue)

	base := []string{"DATABASE_URL=" + dbURL, "REDIS_URL=" + redisURL, "ENRICHQ_LOG_FORMAT=json",
		"DEMO_SEED_KEY=demo-seed-key", "DEMO_PDL_KEY=demo-pdl-key", "DEMO_HUNTER_KEY=demo-hunter-key", "ENRICHQ_API_ADDR=127.0.0.1:0"}
	for _, kv := range os.Environ() { // the vendors file names every vendor: no ENRICHQ_VENDOR_*
		if !strings.HasPrefix(kv, "ENRICHQ_VENDOR_") && !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "REDIS_URL=") {
			base = append(base, kv)
		}
	}
	cases := []*waterfallCase{
		{label: "auto, warm-up", salt: "warm", warmUp: true, tenant: 1},
		{label: "waterfall (auto)", tenant: 1},
		{label: "seed alone", only: "seed", tenant: 2},
		{label: "pdl alone", only: "pdl", tenant: 3},
		{label: "hunter alone", only: "hunter", tenant: 4},
	}
	fmt.Fprintf(stdout, "list: %d rows, profile and email (and verify where the finder is), bulk %v, by segment: %s\n", o.rows, o.bulk, segmentMix(o.rows))
	for i, c := range cases {
		file := filepath.Join(o.logDir, fmt.Sprintf("vendors-%d.yaml", i))
		if err := os.WriteFile(file, []byte(demoVendorsFile(seedURL, pdlURL, hunterURL, c.only, o.bulk)), 0o644); err != nil {
			return err
		}
		if err := runCase(ctx, o, c, i, base, file, [3]string{seedURL, pdlURL, hunterURL}, run); err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		fmt.Fprintf(stdout, "  %-17s job %s %s in %.1fs: %d matched of %d, %d units spent\n", c.label, c.job.ID, c.job.State,
			c.took.Seconds(), c.job.Rows["matched"], c.job.Rows["total"], c.job.Credits.Spent)
	}
	fmt.Fprintf(stdout, "\nvendors file of the waterfall (%s):\n%s\n", filepath.Join(o.logDir, "vendors-1.yaml"), demoVendorsFile(seedURL, pdlURL, hunterURL, "", o.bulk))
	printWaterfallTable(stdout, cases[1:])
	return nil
}

// runCase starts a stack for c, runs the list, and stops the stack (the
// worker writes what it learned as it stops).
func runCase(ctx context.Context, o options, c *waterfallCase, i int, base []string, vendorsFile string, fakeURLs [3]string, run int64) error {
	seedURL, pdlURL, hunterURL := fakeURLs[0], fakeURLs[1], fakeURLs[2]
	s := &stack{apiKey: fmt.Sprintf("demo-waterfall-key-%d", i), logDir: filepath.Join(o.logDir, fmt.Sprintf("case-%d", i))}
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return err
	}
	env := append(append([]string(nil), base...), "ENRICHQ_VENDORS_FILE="+vendorsFile,
		fmt.Sprintf("ENRICHQ_QUEUE=enrichq-demo-waterfall-%d-%d", run, i),
		fmt.Sprintf("ENRICHQ_API_KEYS=demo-waterfall-%d-%d:%s", run, c.tenant, s.apiKey))
	apiURL, err := s.start(ctx, o.bin, "api", env, "api listening on ")
	if err != nil {
		s.stop(io.Discard)
		return err
	}
	for _, name := range []string{"worker", "scheduler"} {
		if _, err := s.start(ctx, o.bin, name, env, name+" started"); err != nil {
			s.stop(io.Discard)
			return err
		}
	}
	defer s.stop(io.Discard)
	co := o
	co.apiURL, co.apiKey = apiURL, s.apiKey
	if err := waitReady(ctx, apiURL); err != nil {
		return err
	}
	seed0, _, _ := fakeBilled(ctx, seedURL)
	pdl0, _, _ := fakeBilled(ctx, pdlURL)
	hunter0, verify0, _ := hunterBilled(ctx, hunterURL)
	start := time.Now()
	lookups := "profile,email"
	if c.verifies() {
		lookups += ",verify"
	}
	q := url.Values{"name": {"Waterfall demo: " + c.label}, "lookups": {lookups}, "budget_credits": {"1000000"}}
	var st jobStatus
	if err := call(ctx, co, http.MethodPost, "/v1/jobs?"+q.Encode(), "text/csv", waterfallCSV(o.rows, c.salt), &st); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for st.State != "completed" && st.State != "canceled" && st.State != "failed" && st.State != "paused" {
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s not finished in time (state %s): %w", st.ID, st.State, ctx.Err())
		case <-tick.C:
		}
		if err := call(ctx, co, http.MethodGet, "/v1/jobs/"+st.ID, "", nil, &st); err != nil {
			return fmt.Errorf("poll: %w", err)
		}
	}
	c.took, c.job = time.Since(start), st
	seed1, _, _ := fakeBilled(ctx, seedURL)
	pdl1, _, _ := fakeBilled(ctx, pdlURL)
	hunter1, verify1, _ := hunterBilled(ctx, hunterURL)
	c.seedBilled, c.pdlBilled, c.hunterSearches, c.hunterVerifies = seed1-seed0, pdl1-pdl0, hunter1-hunter0, verify1-verify0
	if st.State != "completed" {
		return fmt.Errorf("job %s ended %s%s", st.ID, st.State, reason(st.StateReason))
	}
	if c.verifies() {
		var err error
		if c.statuses, err = emailStatuses(ctx, co, st.ID); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	return nil
}

// verifies says whether the case's vendors sell verification (the finder
// does): its job asks the verify stage too.
func (c *waterfallCase) verifies() bool { return c.only == "" || c.only == "hunter" }

// emailStatuses counts a finished job's delivered emails by email_status,
// from its results download.
func emailStatuses(ctx context.Context, o options, jobID string) (map[string]int, error) {
	var b bytes.Buffer
	if err := callRaw(ctx, o, http.MethodGet, "/v1/jobs/"+jobID+"/results?format=ndjson", &b); err != nil {
		return nil, err
	}
	out := map[string]int{}
	dec := json.NewDecoder(&b)
	for dec.More() {
		var r struct {
			Email       *string `json:"email"`
			EmailStatus *string `json:"email_status"`
		}
		if err := dec.Decode(&r); err != nil {
			return nil, err
		}
		switch {
		case r.Email == nil:
		case r.EmailStatus == nil:
			out["unverified"]++
		default:
			out[*r.EmailStatus]++
		}
	}
	return out, nil
}

// statusText is a case's email statuses, "valid 40, accept_all 3, ...".
func (c *waterfallCase) statusText() string {
	if c.statuses == nil {
		return "-"
	}
	keys := make([]string, 0, len(c.statuses))
	for k := range c.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, c.statuses[k])
	}
	return strings.Join(parts, ", ")
}

// printWaterfallTable prints the cases side by side: units spent, rows
// matched, units per matched row, and the fakes' own bills.
func printWaterfallTable(w io.Writer, cases []*waterfallCase) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tunits spent\trows matched\tunits per matched row\tseed billed (credits)\tpdl billed (credits × 3)\thunter billed (searches × 2 + verifications × 1)\tledger = bills\temails by status\t")
	for _, c := range cases {
		per := "-"
		if m := c.job.Rows["matched"]; m > 0 {
			per = fmt.Sprintf("%.2f", float64(c.job.Credits.Spent)/float64(m))
		}
		billed := c.seedBilled + demoPDLValue*c.pdlBilled + demoHunterValue*c.hunterSearches + demoVerifyValue*c.hunterVerifies
		eq := "yes"
		if billed != c.job.Credits.Spent {
			eq = fmt.Sprintf("NO (%d)", billed)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d of %d\t%s\t%d\t%d × 3\t%d × 2 + %d\t%s\t%s\t\n", c.label, c.job.Credits.Spent, c.job.Rows["matched"],
			c.job.Rows["total"], per, c.seedBilled, c.pdlBilled, c.hunterSearches, c.hunterVerifies, eq, c.statusText())
	}
	tw.Flush()
}

// waterfallSegments are the list's segments in turn: a person's name at a
// company domain (.com, .fr, .de) or a person's email at one.
var waterfallSegments = []struct{ kind, tld string }{
	{"name_domain", "com"}, {"name_domain", "fr"}, {"name_domain", "de"},
	{"email", "com"}, {"email", "fr"}, {"email", "de"},
}

func segmentMix(n int) string {
	count := map[string]int{}
	for i := range n {
		s := waterfallSegments[i%len(waterfallSegments)]
		count[s.kind+"/."+s.tld]++
	}
	var parts []string
	for _, s := range waterfallSegments {
		k := s.kind + "/." + s.tld
		parts = append(parts, fmt.Sprintf("%s %d", k, count[k]))
	}
	return strings.Join(parts, ", ")
}

// waterfallCSV is a deterministic list of n people mixing the segments;
// salt makes another list of the same mix (the warm-up's).
func waterfallCSV(n int, salt string) []byte {
	firsts := []string{"Jane", "Lukas", "Amelie", "Carlos", "Mei", "Noah", "Sofia", "Pierre", "Greta", "Omar"}
	lasts := []string{"Doe", "Schmidt", "Martin", "Garcia", "Chen", "Muller", "Dubois", "Rossi", "Weber", "Bernard"}
	var b bytes.Buffer
	b.WriteString("ref,name,domain,email\n")
	for i := range n {
		s := waterfallSegments[i%len(waterfallSegments)]
		first, last := firsts[i%len(firsts)], lasts[(i/len(firsts))%len(lasts)]
		dom := fmt.Sprintf("company%s%d.%s", salt, i, s.tld)
		if s.kind == "email" {
			fmt.Fprintf(&b, "r%s%04d,,,%s.%s@%s\n", salt, i, strings.ToLower(first), strings.ToLower(last), dom)
		} else {
			fmt.Fprintf(&b, "r%s%04d,%s %s,%s,\n", salt, i, first, last, dom)
		}
	}
	return b.Bytes()
}

// hunterBilled reads the finder fake's /_fake/ledger: its searches and
// verifications billed so far.
func hunterBilled(ctx context.Context, fakeURL string) (searches, verifications int64, err error) {
	var v struct {
		Searches      int64 `json:"searches"`
		Verifications int64 `json:"verifications"`
	}
	err = fakeLedger(ctx, fakeURL, &v)
	return v.Searches, v.Verifications, err
}

// withDatabase is the admin URL (database postgres) and the URL of
// database name, on DATABASE_URL's server.
func withDatabase(raw, name string) (admin, db string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/postgres"
	admin = u.String()
	u.Path = "/" + name
	return admin, u.String(), nil
}

// fakeBilled reads a fake's /_fake/ledger: its credits billed so far.
func fakeBilled(ctx context.Context, fakeURL string) (credits, calls int64, err error) {
	var v struct {
		TotalCredits int64 `json:"total_credits"`
		BilledCalls  int64 `json:"billed_calls"`
	}
	err = fakeLedger(ctx, fakeURL, &v)
	return v.TotalCredits, v.BilledCalls, err
}

// fakeLedger decodes a fake's GET /_fake/ledger into v.
func fakeLedger(ctx context.Context, fakeURL string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fakeURL+"/_fake/ledger", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
