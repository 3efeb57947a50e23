package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// jobStatus is the API's status body of a job.
type jobStatus struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	State       string `json:"state"`
	StateReason string `json:"state_reason"`
	Rows        struct {
		Total     int `json:"total"`
		Pending   int `json:"pending"`
		InFlight  int `json:"in_flight"`
		RetryWait int `json:"retry_wait"`
		Matched   int `json:"matched"`
		NoMatch   int `json:"no_match"`
		Failed    int `json:"failed"`
		Skipped   int `json:"skipped"`
	} `json:"rows"`
	Credits struct {
		Budget   *int64 `json:"budget"`
		Reserved int64  `json:"reserved"`
		Spent    int64  `json:"spent"`
	} `json:"credits"`
	Progress   float64  `json:"progress"`
	ETASeconds *int64   `json:"eta_seconds"`
	Lookups    []string `json:"lookups"`
	Roles      []string `json:"roles"`
	uploadInfo
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`

	raw json.RawMessage // the body as the API sent it, for --json
}

func (s *jobStatus) UnmarshalJSON(b []byte) error {
	type plain jobStatus
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = jobStatus(p)
	s.raw = append(json.RawMessage(nil), b...)
	return nil
}

// done is the number of rows in a terminal state.
func (s jobStatus) done() int {
	return s.Rows.Matched + s.Rows.NoMatch + s.Rows.Failed + s.Rows.Skipped
}

// ended reports whether the job will not move without someone acting:
// completed, canceled, failed, or paused (budget exhausted, vendor key
// refused).
func (s jobStatus) ended() bool {
	switch s.State {
	case "completed", "canceled", "failed", "paused":
		return true
	}
	return false
}

func (s jobStatus) budget() string {
	if s.Credits.Budget == nil {
		return "no budget"
	}
	return fmt.Sprintf("budget %d", *s.Credits.Budget)
}

// uploadInfo is what an upload held, in the status and the estimate.
type uploadInfo struct {
	RowsUploaded    *int              `json:"rows_uploaded"`
	DistinctLookups *int              `json:"distinct_lookups"`
	Columns         map[string]string `json:"columns"`
	ExtraColumns    []string          `json:"extra_columns"`
}

// describe says how the file was read: which header went to which field,
// and what was kept as extra columns; "" when the API did not say.
func (u uploadInfo) describe() string {
	if len(u.Columns) == 0 {
		return ""
	}
	var pairs []string
	for h, f := range u.Columns {
		pairs = append(pairs, fmt.Sprintf("%q -> %s", h, f))
	}
	sort.Strings(pairs)
	s := "columns:  " + strings.Join(pairs, ", ")
	if len(u.ExtraColumns) > 0 {
		s += fmt.Sprintf("; kept as extra: %s", strings.Join(u.ExtraColumns, ", "))
	}
	return s
}

// jobOptions are the flags of submit and estimate that become the upload's
// query parameters.
type jobOptions struct {
	roles, lookups, budget, maxAge, name, callbackURL string
	encoding, sheet                                   string
	maps                                              mapFlag
	uploadID                                          string // --upload: a stored upload instead of a file
}

// mapFlag collects --map field=Header, repeatable.
type mapFlag map[string]string

func (m *mapFlag) String() string { return "" }

func (m *mapFlag) Set(v string) error {
	f, h, ok := strings.Cut(v, "=")
	f, h = strings.ToLower(strings.TrimSpace(f)), strings.TrimSpace(h)
	if !ok || f == "" || h == "" {
		return fmt.Errorf("%q is not field=Header (like company=\"Account Name\")", v)
	}
	if *m == nil {
		*m = mapFlag{}
	}
	if _, dup := (*m)[f]; dup {
		return fmt.Errorf("%s is mapped twice", f)
	}
	(*m)[f] = h
	return nil
}

func (o *jobOptions) register(f *flags) {
	f.StringVar(&o.roles, "roles", "", `role titles, comma-separated ("VP Sales,CTO"): each company-only row becomes one lookup per role`)
	f.StringVar(&o.lookups, "lookups", "", "stages to run, comma-separated: profile, email, phone, verify (default profile; verify checks the emails found)")
	f.StringVar(&o.budget, "budget", "", "the job's hard cap in credits (default none)")
	f.StringVar(&o.maxAge, "max-age", "", "reuse answers newer than this: a duration or days, 30d (default 30d; 0 never reuses)")
	f.StringVar(&o.name, "name", "", "the job's name (default none)")
	if f.name == "submit" {
		f.StringVar(&o.callbackURL, "callback-url", "", "a URL the API calls (a signed POST) when the job ends")
	}
	f.Var(&o.maps, "map", `read a column as a field, over the header matching: field=Header (fields: ref, profile_url, email, name, first_name, last_name, company, domain, role); repeatable`)
	f.StringVar(&o.encoding, "encoding", "", "a CSV's text encoding: utf-8, windows-1252, utf-16le, utf-16be (default: from its BOM, else UTF-8, else Windows-1252)")
	f.StringVar(&o.sheet, "sheet", "", "an .xlsx's sheet to read (default the first)")
	if f.name != "upload" {
		f.StringVar(&o.uploadID, "upload", "", "a stored upload's id (enrichq upload) instead of FILE; --map, --encoding and --sheet are the upload's")
	}
}

func (o *jobOptions) query() (url.Values, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v = strings.TrimSpace(v); v != "" {
			q.Set(k, v)
		}
	}
	if o.budget != "" {
		if n, err := strconv.ParseInt(o.budget, 10, 64); err != nil || n < 0 {
			return nil, usagef("--budget %q is not a whole number of credits", o.budget)
		}
	}
	set("roles", o.roles)
	set("lookups", o.lookups)
	set("budget_credits", o.budget)
	set("max_age", o.maxAge)
	set("name", o.name)
	set("callback_url", o.callbackURL)
	set("encoding", o.encoding)
	set("sheet", o.sheet)
	if len(o.maps) > 0 {
		b, err := json.Marshal(o.maps) // JSON: a header may hold a comma or a colon
		if err != nil {
			return nil, err
		}
		q.Set("columns", string(b))
	}
	return q, nil
}

// Content types of the files enrichq uploads.
const (
	typeCSV  = "text/csv"
	typeTSV  = "text/tab-separated-values"
	typeXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
)

// openUpload opens the file to upload ("-" is stdin, as CSV) and says its
// content type, from its extension: .xlsx, .tsv, else CSV.
func openUpload(e *env, name string) (io.Reader, string, func(), error) {
	if name == "-" {
		return e.stdin, typeCSV, func() {}, nil
	}
	ct := typeCSV
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return nil, "", nil, usagef("%s: enrichq uploads CSV, TSV and .xlsx files (a header row naming the columns); for JSON jobs POST /v1/jobs directly", name)
	case ".xls", ".xlsm", ".xlsb", ".ods", ".numbers":
		return nil, "", nil, usagef("%s: save the sheet as .xlsx (Excel Workbook) or as CSV", name)
	case ".xlsx":
		ct = typeXLSX
	case ".tsv", ".tab":
		ct = typeTSV
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, "", nil, err
	}
	return f, ct, func() { f.Close() }, nil
}

// upload POSTs a file upload with query, or the JSON job of a stored
// upload with query's options when uploadID is set, and answers the
// response, open.
func upload(ctx context.Context, c *client, e *env, file, uploadID string, q url.Values, idemKey string) (*http.Response, error) {
	var body io.Reader
	h := http.Header{}
	if uploadID != "" {
		b, err := storedJob(uploadID, q)
		if err != nil {
			return nil, err
		}
		body, file = bytes.NewReader(b), "upload "+uploadID
		h.Set("Content-Type", "application/json")
		q = url.Values{"dry_run": q["dry_run"]}
	} else {
		f, ct, closeBody, err := openUpload(e, file)
		if err != nil {
			return nil, err
		}
		defer closeBody()
		body = f
		h.Set("Content-Type", ct)
	}
	if idemKey != "" {
		h.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.do(ctx, http.MethodPost, "/v1/jobs", q, body, h)
	var ae *apiError
	if errors.As(err, &ae) {
		return nil, fmt.Errorf("%s refused: %w", file, err)
	}
	return resp, err
}

// fileOrUpload is the FILE argument, or "" with --upload (then no FILE).
func fileOrUpload(f *flags, pos []string, uploadID string) (string, error) {
	switch {
	case uploadID == "" && len(pos) == 1:
		return pos[0], nil
	case uploadID != "" && len(pos) == 0:
		return "", nil
	case uploadID != "" && len(pos) > 0:
		return "", usagef("%s: give FILE or --upload ID, not both", f.name)
	}
	return "", usagef("usage: enrichq %s (enrichq %s -h describes its flags)", f.synopsis, f.name)
}

// storedJob is the JSON job of the stored upload id with the options of q
// (as opts.query made them); a file's reading options are refused.
func storedJob(id string, q url.Values) ([]byte, error) {
	for _, k := range []string{"columns", "encoding", "sheet"} {
		if q.Get(k) != "" {
			return nil, usagef("--upload: the upload was read with its own --map, --encoding and --sheet; give them to enrichq upload")
		}
	}
	job := map[string]any{"upload_id": id}
	for _, k := range []string{"roles", "lookups"} {
		if v := q.Get(k); v != "" {
			items, err := csv.NewReader(strings.NewReader(v)).Read()
			if err != nil {
				return nil, usagef("--%s %q: %v", k, v, err)
			}
			for i := range items {
				items[i] = strings.TrimSpace(items[i])
			}
			job[k] = items
		}
	}
	if v := q.Get("budget_credits"); v != "" {
		n, _ := strconv.ParseInt(v, 10, 64) // opts.query checked it
		job["budget_credits"] = n
	}
	for _, k := range []string{"name", "max_age", "callback_url"} {
		if v := q.Get(k); v != "" {
			job[k] = v
		}
	}
	return json.Marshal(job)
}

func runSubmit(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "submit", "submit FILE.csv|FILE.tsv|FILE.xlsx|--upload ID [--map field=Header]... [--roles R1,R2] [--lookups profile,email,phone,verify] [--budget N] [--max-age 30d] [--name NAME] [--callback-url URL] [--idempotency-key K] [--wait] [--json]")
	var opts jobOptions
	opts.register(f)
	idemKey := f.String("idempotency-key", "", "submitting again with the same key returns the first job instead of a new one")
	wait := f.Bool("wait", false, "show progress on stderr until the job ends, then a summary; exit 1 unless it completed")
	asJSON := f.Bool("json", false, "print the job's status body (with --wait, the final one) instead of its id")
	interval := f.Duration("interval", time.Second, "with --wait: how often to ask for the job's status")
	progress := f.String("progress", "auto", "with --wait: bar, plain (a line now and then), none, or auto (a bar on a terminal, else plain)")
	pos, err := f.parse(args, -1)
	if err != nil {
		return helpOK(err)
	}
	file, err := fileOrUpload(f, pos, opts.uploadID)
	if err != nil {
		return err
	}
	q, err := opts.query()
	if err != nil {
		return err
	}
	if *interval <= 0 {
		return usagef("--interval must be positive")
	}
	mode, err := progressMode(*progress, e.stderr)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}

	resp, err := upload(ctx, c, e, file, opts.uploadID, q, *idemKey)
	if err != nil {
		return err
	}
	var st jobStatus
	err = decodeJSON(resp, &st)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		fmt.Fprintf(e.stderr, "job %s was submitted before with this idempotency key: this is that job (%s)\n", st.ID, st.State)
	} else {
		fmt.Fprintf(e.stderr, "submitted job %s: %d lookups, %s, %s\n", st.ID, st.Rows.Total, describeLookups(st), st.budget())
		if d := st.describe(); d != "" {
			fmt.Fprintln(e.stderr, d)
		}
	}
	if !*wait {
		return printJob(e.stdout, st, *asJSON)
	}
	if !*asJSON {
		// The id at once, so that a script has it even if the wait is cut short.
		fmt.Fprintln(e.stdout, st.ID)
	}
	final, werr := waitJob(ctx, c, e.stderr, st, *interval, mode)
	if *asJSON {
		if err := printJob(e.stdout, final, true); err != nil && werr == nil {
			werr = err
		}
	}
	return werr
}

func describeLookups(st jobStatus) string {
	s := "lookups " + strings.Join(st.Lookups, ",")
	if len(st.Roles) > 0 {
		s += fmt.Sprintf(", roles %q", strings.Join(st.Roles, ","))
	}
	return s
}

// printJob writes the job's id, or its status body as the API sent it.
func printJob(w io.Writer, st jobStatus, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprintln(w, st.ID)
		return err
	}
	raw := st.raw
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(st); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(raw)))
	return err
}

// Polling the status through errors: transient ones are retried for this
// long in a row before the wait gives up.
const retryFor = 2 * time.Minute

// waitJob polls the job every interval, showing progress, until it ends. It
// then writes the summary and returns the last status, and an error unless
// the job completed.
func waitJob(ctx context.Context, c *client, stderr io.Writer, st jobStatus, interval time.Duration, mode string) (jobStatus, error) {
	prog := newProgress(mode, stderr, st)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var failingSince time.Time
	for !st.ended() {
		select {
		case <-ctx.Done():
			prog.stop(st)
			fmt.Fprintf(stderr, "stopped waiting; job %s goes on: enrichq status %s\n", st.ID, st.ID)
			return st, fmt.Errorf("interrupted: %w", ctx.Err())
		case <-tick.C:
		}
		var next jobStatus
		err := c.getJSON(ctx, jobPath(st.ID), nil, &next)
		switch {
		case err == nil:
			failingSince = time.Time{}
			st = next
			prog.update(st)
		case ctx.Err() != nil:
			// Interrupted during the call: the select above says so.
		case transient(err) && (failingSince.IsZero() || time.Since(failingSince) < retryFor):
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			prog.note(fmt.Sprintf("status unavailable, retrying: %v", err))
		default:
			prog.stop(st)
			return st, fmt.Errorf("job %s: polling its status: %w", st.ID, err)
		}
	}
	prog.stop(st)
	fmt.Fprintln(stderr, summary(st, time.Now()))
	if st.State != "completed" {
		reason := st.StateReason
		if reason == "" {
			reason = "no reason given"
		}
		return st, fmt.Errorf("job %s %s: %s", st.ID, st.State, oneLine(reason))
	}
	return st, nil
}

// summary is the paragraph written when a wait ends.
func summary(st jobStatus, now time.Time) string {
	end := now
	if st.FinishedAt != nil {
		end = *st.FinishedAt
	}
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s after %s", st.ID, st.State, end.Sub(st.CreatedAt).Round(100*time.Millisecond))
	if st.State != "completed" && st.StateReason != "" {
		fmt.Fprintf(&b, " (%s)", oneLine(st.StateReason))
	}
	r := st.Rows
	fmt.Fprintf(&b, ": %d of %d rows done, %d matched, %d no_match, %d failed, %d skipped", st.done(), r.Total, r.Matched, r.NoMatch, r.Failed, r.Skipped)
	if open := r.Total - st.done(); open > 0 {
		fmt.Fprintf(&b, ", %d still open", open)
	}
	fmt.Fprintf(&b, "; %d credits spent", st.Credits.Spent)
	if st.Credits.Reserved > 0 {
		fmt.Fprintf(&b, " and %d reserved", st.Credits.Reserved)
	}
	if st.Credits.Budget != nil {
		fmt.Fprintf(&b, " of a budget of %d", *st.Credits.Budget)
	}
	fmt.Fprintf(&b, ". Results: enrichq results %s --format csv > results.csv", st.ID)
	return b.String()
}

func runEstimate(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "estimate", "estimate FILE.csv|FILE.tsv|FILE.xlsx|--upload ID [--map field=Header]... [--roles R1,R2] [--lookups profile,email,phone,verify] [--budget N] [--max-age 30d] [--json]")
	var opts jobOptions
	opts.register(f)
	asJSON := f.Bool("json", false, "print the API's answer as JSON")
	pos, err := f.parse(args, -1)
	if err != nil {
		return helpOK(err)
	}
	file, err := fileOrUpload(f, pos, opts.uploadID)
	if err != nil {
		return err
	}
	q, err := opts.query()
	if err != nil {
		return err
	}
	q.Set("dry_run", "true")
	c, err := e.client()
	if err != nil {
		return err
	}
	resp, err := upload(ctx, c, e, file, opts.uploadID, q, "")
	var ae *apiError
	if errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusUnprocessableEntity) && mentionsDryRun(ae) {
		return fmt.Errorf("the API at %s cannot estimate (it does not know dry_run): %s", c.base.Redacted(), oneLine(ae.Message))
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var est struct {
		DryRun   bool `json:"dry_run"`
		Rows     int  `json:"rows"`
		Distinct int  `json:"distinct"`
		Cached   int  `json:"cached"`
		// Suppressed rows are of erased people: skipped, never looked up.
		Suppressed int `json:"suppressed"`
		Calls      int `json:"calls"`
		// Verifications are the email checks at most (lookups with verify).
		Verifications int `json:"verifications"`
		Credits       struct {
			Min int64 `json:"min"`
			Max int64 `json:"max"`
		} `json:"credits"`
		Seconds float64 `json:"seconds"`
		uploadInfo
	}
	if err := json.Unmarshal(raw, &est); err != nil {
		return fmt.Errorf("the API's estimate is not the JSON expected: %v", err)
	}
	if !est.DryRun {
		// An API that ignores dry_run stored a real job: take it back.
		var st jobStatus
		if json.Unmarshal(raw, &st) == nil && st.ID != "" {
			cerr := c.postJSON(ctx, jobPath(st.ID, "cancel"), nil, &st)
			if cerr != nil {
				return fmt.Errorf("the API at %s ignored dry_run and created job %s; canceling it failed: %v", c.base.Redacted(), st.ID, cerr)
			}
			return fmt.Errorf("the API at %s ignored dry_run and created job %s; it was canceled", c.base.Redacted(), st.ID)
		}
		return fmt.Errorf("the API at %s did not answer with an estimate (no \"dry_run\": true)", c.base.Redacted())
	}
	if *asJSON {
		_, err := fmt.Fprintf(e.stdout, "%s\n", strings.TrimSpace(string(raw)))
		return err
	}
	w := e.stdout
	if d := est.describe(); d != "" {
		fmt.Fprintln(w, d)
	}
	fmt.Fprintf(w, "rows:     %d lookups", est.Rows)
	if est.Distinct > 0 && est.Distinct != est.Rows {
		fmt.Fprintf(w, " (%d distinct)", est.Distinct)
	}
	if est.RowsUploaded != nil {
		fmt.Fprintf(w, " from %d rows in the file", *est.RowsUploaded)
	}
	fmt.Fprintf(w, ", %d answered by the cache", est.Cached)
	if est.Suppressed > 0 {
		fmt.Fprintf(w, ", %d of erased people (skipped, never looked up)", est.Suppressed)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "credits:  %d to %d", est.Credits.Min, est.Credits.Max)
	if est.Verifications > 0 {
		fmt.Fprintf(w, " (%d email verifications at most)", est.Verifications)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "time:     about %s at the vendor's rate", (time.Duration(est.Seconds * float64(time.Second))).Round(time.Second))
	if est.Calls > 0 {
		fmt.Fprintf(w, " (%d vendor calls at most)", est.Calls)
	}
	fmt.Fprintln(w)
	if opts.budget != "" {
		b, _ := strconv.ParseInt(opts.budget, 10, 64)
		switch {
		case b < est.Credits.Min:
			fmt.Fprintf(w, "budget:   %d does not cover the least it can cost (%d): the job would pause\n", b, est.Credits.Min)
		case b < est.Credits.Max:
			fmt.Fprintf(w, "budget:   %d covers the least it can cost, not the most (%d)\n", b, est.Credits.Max)
		default:
			fmt.Fprintf(w, "budget:   %d covers the most it can cost\n", b)
		}
	}
	return nil
}

// mentionsDryRun reports whether an error answer is about dry_run itself.
func mentionsDryRun(ae *apiError) bool {
	for _, d := range ae.Details {
		if d.Column == "dry_run" {
			return true
		}
	}
	return strings.Contains(ae.Message, "dry_run")
}
