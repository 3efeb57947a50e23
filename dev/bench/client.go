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
	"strings"
	"time"
)

// jobStatus is the part of the API's status body the benchmark reads.
type jobStatus struct {
	ID          string         `json:"id"`
	State       string         `json:"state"`
	StateReason string         `json:"state_reason"`
	Rows        map[string]int `json:"rows"`
	Credits     struct {
		Spent    int64 `json:"spent"`
		Reserved int64 `json:"reserved"`
	} `json:"credits"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

func (j jobStatus) finished() bool {
	switch j.State {
	case "completed", "canceled", "failed", "paused":
		return j.State != "completed" || j.FinishedAt != nil
	}
	return false
}

func (j jobStatus) open() int { return j.Rows["pending"] + j.Rows["in_flight"] + j.Rows["retry_wait"] }

// httpClient keeps connections to the API alive: polls reuse them, as a
// client that polls would.
var httpClient = &http.Client{Transport: &http.Transport{
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     time.Minute,
}}

// submitCSV uploads a CSV body as a job with options in the query.
func (s *stack) submitCSV(ctx context.Context, q url.Values, body io.Reader, size int64) (jobStatus, error) {
	return s.submitBody(ctx, q, body, size, "text/csv")
}

// submitBody uploads a body of a content type as a job with options in the query.
func (s *stack) submitBody(ctx context.Context, q url.Values, body io.Reader, size int64, contentType string) (jobStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apiURL+"/v1/jobs?"+q.Encode(), body)
	if err != nil {
		return jobStatus{}, err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", contentType)
	var st jobStatus
	if err := do(req, http.StatusCreated, &st); err != nil {
		return jobStatus{}, fmt.Errorf("submit: %w", err)
	}
	return st, nil
}

// submitFile uploads the CSV file at path.
func (s *stack) submitFile(ctx context.Context, q url.Values, path string) (jobStatus, error) {
	return s.submitFileAs(ctx, q, path, "text/csv")
}

// submitFileAs uploads the file at path with a content type.
func (s *stack) submitFileAs(ctx context.Context, q url.Values, path, contentType string) (jobStatus, error) {
	f, err := os.Open(path)
	if err != nil {
		return jobStatus{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return jobStatus{}, err
	}
	return s.submitBody(ctx, q, f, fi.Size(), contentType)
}

// liftLimits removes the tenant's default job budget and monthly allowance:
// a benchmark spends more than a tenant's defaults (docs/money.md).
func (s *stack) liftLimits(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, s.apiURL+"/v1/account",
		strings.NewReader(`{"default_job_budget": null, "monthly_allowance": null}`))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	return do(req, http.StatusOK, nil)
}

// status is GET /v1/jobs/{id}.
func (s *stack) status(ctx context.Context, id string) (jobStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.apiURL+"/v1/jobs/"+id, nil)
	if err != nil {
		return jobStatus{}, err
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	var st jobStatus
	err = do(req, http.StatusOK, &st)
	return st, err
}

// waitJob polls the job every interval until it has finished, and returns
// its last status and when that poll answered.
func (s *stack) waitJob(ctx context.Context, id string, interval time.Duration) (jobStatus, time.Time, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		st, err := s.status(ctx, id)
		if err != nil {
			return st, time.Time{}, err
		}
		if st.finished() {
			at := time.Now()
			if st.State != "completed" {
				return st, at, fmt.Errorf("job %s ended %s: %s", id, st.State, st.StateReason)
			}
			return st, at, nil
		}
		select {
		case <-ctx.Done():
			return st, time.Time{}, fmt.Errorf("job %s still %s with %d open rows: %w", id, st.State, st.open(), ctx.Err())
		case <-tick.C:
		}
	}
}

func do(req *http.Request, want int, out any) error {
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// vendorLedger is the fake vendor's bill so far (GET /_fake/ledger).
type vendorLedger struct {
	TotalCredits int64         `json:"total_credits"`
	BilledCalls  int64         `json:"billed_calls"`
	ByStatus     map[int]int64 `json:"by_status"`
}

func (s *stack) vendorLedger(ctx context.Context) (vendorLedger, error) {
	var v vendorLedger
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.vendorURL+"/_fake/ledger", nil)
	if err != nil {
		return v, err
	}
	err = do(req, http.StatusOK, &v)
	return v, err
}

// companiesCSV is a deterministic list of n companies (ref, company, a CRM
// owner column that is kept as extra), as the demo uploads. Company names
// carry the run's salt so that no answer is shared with another list.
func companiesCSV(w io.Writer, n int, salt string) error {
	prefixes := []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne"}
	suffixes := []string{"GmbH", "AG", "Inc", "Ltd", "SA", "BV"}
	bw := &bytes.Buffer{}
	bw.WriteString("ref,company,crm_owner\n")
	for i := range n {
		fmt.Fprintf(bw, "crm-%07d,%s %s %s%d,owner-%d\n", i+1, prefixes[i%len(prefixes)], suffixes[i%len(suffixes)], salt, i+1, i%7)
		if bw.Len() > 1<<20 {
			if _, err := w.Write(bw.Bytes()); err != nil {
				return err
			}
			bw.Reset()
		}
	}
	_, err := w.Write(bw.Bytes())
	return err
}

// companyName is the company of row i (0-based) of companiesCSV.
func companyName(i int, salt string) string {
	prefixes := []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne"}
	suffixes := []string{"GmbH", "AG", "Inc", "Ltd", "SA", "BV"}
	return fmt.Sprintf("%s %s %s%d", prefixes[i%len(prefixes)], suffixes[i%len(suffixes)], salt, i+1)
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func csvBytes(n int, salt string) []byte {
	var b bytes.Buffer
	_ = companiesCSV(&b, n, salt)
	return b.Bytes()
}

// jobQuery is the options of a company list job: one role, profile + email.
func jobQuery(name string) url.Values {
	return url.Values{"name": {name}, "roles": {"VP Sales"}, "lookups": {"profile,email"}}
}
