// Package e2e_test drives enrichq end to end: the real HTTP API, real
// Postgres, real Redis, real asynq workers and the fake vendor.
package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

const apiKey = "e2e-key-0001"

type status struct {
	ID      string         `json:"id"`
	State   string         `json:"state"`
	Reason  string         `json:"state_reason"`
	Rows    map[string]int `json:"rows"`
	Credits struct {
		Budget   *int64 `json:"budget"`
		Reserved int64  `json:"reserved"`
		Spent    int64  `json:"spent"`
	} `json:"credits"`
	Progress float64 `json:"progress"`
}

func do(t *testing.T, method, u, ctype string, body []byte, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %s: decode: %v", method, u, resp.Status, err)
		}
	}
	return resp
}

func TestUploadPollResults(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{true, false} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: bulk}},
				Static: map[string]string{apiKey: "acme"}})
			b := api.Bundle

			var csv bytes.Buffer
			csv.WriteString("ref,company,owner\n")
			const companies = 120
			for i := range companies {
				fmt.Fprintf(&csv, "crm-%03d,Company %d AG,owner-%d\n", i, i, i%3)
			}
			q := url.Values{"roles": {"VP Sales"}, "lookups": {"profile,email,phone"}, "budget_credits": {"100000"}}
			var st status
			resp := do(t, http.MethodPost, api.URL+"/v1/jobs?"+q.Encode(), "text/csv", csv.Bytes(), &st)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") != "/v1/jobs/"+st.ID {
				t.Fatalf("submit: %s, Location %q, body %+v", resp.Status, resp.Header.Get("Location"), st)
			}

			// Poll as a user would, while the scheduler sweeps.
			deadline := time.Now().Add(60 * time.Second)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for st.State != "completed" {
				if _, err := b.Maintainer.RunOnce(context.Background()); err != nil {
					t.Fatal(err)
				}
				do(t, http.MethodGet, api.URL+"/v1/jobs/"+st.ID, "", nil, &st)
				if st.State == "paused" || st.State == "failed" || time.Now().After(deadline) {
					t.Fatalf("job %s (%s), rows %v", st.State, st.Reason, st.Rows)
				}
				<-tick.C
			}
			if st.Rows["total"] != companies || st.Rows["matched"]+st.Rows["no_match"] != companies || st.Progress != 1 {
				t.Fatalf("finished with rows %v, progress %v", st.Rows, st.Progress)
			}
			if billed := b.Vendor.TotalCharged(); st.Credits.Spent != billed || st.Credits.Reserved != 0 {
				t.Fatalf("the job reports %d credits spent (%d reserved); the vendor billed %d", st.Credits.Spent, st.Credits.Reserved, billed)
			}

			// Results, as ndjson: one line per lookup, every row terminal, extra columns echoed.
			req, _ := http.NewRequest(http.MethodGet, api.URL+"/v1/jobs/"+st.ID+"/results?format=ndjson", nil)
			req.Header.Set("Authorization", "Bearer "+apiKey)
			res, err := client(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			lines, withEmail, withPhones := 0, 0, 0
			for sc.Scan() {
				var r map[string]any
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line %d: %v", lines+1, err)
				}
				lines++
				switch r["state"] {
				case "matched":
					if r["found_profile_url"] == nil || r["full_name"] == nil {
						t.Fatalf("matched line without a profile: %v", r)
					}
				case "no_match":
				default:
					t.Fatalf("line in state %v: %v", r["state"], r)
				}
				if r["email"] != nil {
					withEmail++
				}
				if ph, ok := r["phones"].([]any); ok && len(ph) > 0 {
					withPhones++
				}
				if extra, _ := r["extra"].(map[string]any); extra["owner"] == nil {
					t.Fatalf("extra column not echoed: %v", r)
				}
			}
			if lines != companies || withEmail == 0 || withPhones == 0 {
				t.Fatalf("%d result lines (%d with an email, %d with phones), want %d with some of each", lines, withEmail, withPhones, companies)
			}
		})
	}
}
