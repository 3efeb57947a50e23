package e2e_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// privacyRig is an API with an erasure key over a jobstest bundle.
type privacyRig struct {
	b   *jobstest.Bundle
	url string
}

func (r *privacyRig) call(t *testing.T, key, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %s: %v: %s", method, path, resp.Status, err, data)
		}
	}
	if resp.StatusCode >= 300 && out == nil {
		t.Logf("%s %s: %s %s", method, path, resp.Status, data)
	}
	return resp.StatusCode
}

// submit posts a JSON job and waits for it to finish.
func (r *privacyRig) submit(t *testing.T, body string) string {
	t.Helper()
	var st status
	if code := r.call(t, apiKey, http.MethodPost, "/v1/jobs", body, &st); code != http.StatusCreated {
		t.Fatalf("submit: %d %+v", code, st)
	}
	r.b.WaitJob(t, st.ID, domain.JobCompleted)
	return st.ID
}

type resultRow struct {
	Ref             string  `json:"ref"`
	State           string  `json:"state"`
	Reason          string  `json:"reason"`
	ProfileURL      string  `json:"profile_url"`
	InputEmail      string  `json:"input_email"`
	FoundProfileURL *string `json:"found_profile_url"`
	FullName        *string `json:"full_name"`
	Email           *string `json:"email"`
}

func (r *privacyRig) results(t *testing.T, jobID string) []resultRow {
	t.Helper()
	var page struct {
		Results []resultRow `json:"results"`
	}
	if code := r.call(t, apiKey, http.MethodGet, "/v1/jobs/"+jobID+"/results?format=json&limit=1000", "", &page); code != http.StatusOK {
		t.Fatalf("results: %d", code)
	}
	return page.Results
}

type feedPage struct {
	Results []struct {
		Seq        int64  `json:"seq"`
		Kind       string `json:"kind"`
		Stage      string `json:"stage"`
		JobID      string `json:"job_id"`
		Ref        string `json:"ref"`
		DeletedSeq *int64 `json:"deleted_seq"`
	} `json:"results"`
	NextSince int64 `json:"next_since"`
}

// The controller's duties end to end: an erasure removes one person from
// every table (a pg_dump of the database holds none of their email, profile
// URL or name, while the other people of the same jobs are all there), the
// feed carries a deleted line for each line withdrawn, a later upload of the
// person is skipped without a vendor call until the erasure is lifted,
// retention purges a job on a clock moved past the window and keeps its
// counts and credits, and every action is a line of the audit log.
func TestErasureRetentionAudit(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{true, false} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			testErasureRetentionAudit(t, bulk)
		})
	}
}

func testErasureRetentionAudit(t *testing.T, bulk bool) {
	const tenant = "acme"
	api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: bulk},
		Vendor: func(o *enrichtest.SeedOptions) { o.ProfileHitRate, o.EmailHitRate, o.PhoneHitRate = 1, 1, 0.5 }},
		Static: map[string]string{apiKey: tenant}, Stored: true,
		Service: func(c *service.Config) { c.ErasureKey = []byte("an erasure key of the test, 32 bytes or more") }})
	b := api.Bundle
	ctx := context.Background()
	etlID, etlKey := api.CreateKey(t, tenant, "etl", []domain.Scope{domain.ScopeRead}, nil)
	r := &privacyRig{b: b, url: api.URL}

	// Job 1: eight people by profile URL, every stage.
	slugs := []string{"zelda-quist", "orin-bexley", "mara-thule", "ivo-pellam", "tess-varga", "ugo-brandt", "lena-moritz", "abel-sorn"}
	var rows []string
	for i, s := range slugs {
		rows = append(rows, fmt.Sprintf(`{"ref": "p%d", "profile_url": "https://platform.example/in/%s"}`, i, s))
	}
	job1 := r.submit(t, `{"name": "people", "lookups": ["profile", "email", "phone"], "rows": [`+strings.Join(rows, ",")+`]}`)
	res1 := r.results(t, job1)
	// The person to erase: the first one found with an email.
	var person resultRow
	var others []resultRow
	for _, x := range res1 {
		if x.Email != nil && x.FullName != nil && person.Ref == "" {
			person = x
			continue
		}
		if x.Email != nil && x.FullName != nil {
			others = append(others, x)
		}
	}
	if person.Ref == "" || len(others) == 0 {
		t.Fatalf("the fake vendor found too few emails to test with: %+v", res1)
	}
	email, profileURL, name := *person.Email, *person.FoundProfileURL, *person.FullName
	t.Logf("erasing %s: %s, %s", name, email, profileURL)

	// Job 2: the same person by the email found, beside another person.
	job2 := r.submit(t, `{"name": "by email", "lookups": ["profile", "email"], "rows": [
		{"ref": "e1", "email": "`+email+`"}, {"ref": "e2", "profile_url": "https://platform.example/in/nora-kell"}]}`)
	// A stored upload that holds the person goes with them.
	if code := r.call(t, apiKey, http.MethodPost, "/v1/uploads", `{"rows": [{"ref": "u1", "email": "`+email+`"}]}`, nil); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}

	// The ETL reads the feed with its read key.
	var feed feedPage
	if code := r.call(t, etlKey, http.MethodGet, "/v1/results?since=0&limit=10000", "", &feed); code != http.StatusOK {
		t.Fatalf("feed: %d", code)
	}
	before := map[int64]string{}
	for _, l := range feed.Results {
		before[l.Seq] = l.JobID + "/" + l.Ref
	}
	// The read key may not erase: 403 naming admin.
	if code := r.call(t, etlKey, http.MethodPost, "/v1/erasures", `{"email": "`+email+`"}`, nil); code != http.StatusForbidden {
		t.Fatalf("erasure with a read key: %d, want 403", code)
	}
	callsBefore := vendorCallsFor(b, email, profileURL)

	// The erasure.
	var receipt store.Erasure
	if code := r.call(t, apiKey, http.MethodPost, "/v1/erasures", `{"email": "`+strings.ToUpper(email)+`"}`, &receipt); code != http.StatusCreated {
		t.Fatalf("erasure: %d %+v", code, receipt)
	}
	pretty, _ := json.MarshalIndent(receipt, "", "  ")
	t.Logf("erasure receipt:\n%s", pretty)
	if receipt.Receipt["job_rows"] < 2 || receipt.Receipt["credit_ledger (rewritten)"] == 0 || receipt.Receipt["profile_results"] < 2 || receipt.Receipt["email_results"] < 1 ||
		receipt.Receipt["uploads"] != 1 || receipt.Receipt["lookup_cache"] < 2 || receipt.Receipt["results_feed_log"] < 3 ||
		receipt.Receipt["results_feed_log (deleted lines added)"] != receipt.Receipt["results_feed_log"] {
		t.Fatalf("receipt %v: want both rows, their results, the upload, cache entries and feed lines", receipt.Receipt)
	}

	// pg_dump: nothing of the person, in any table; everyone else still there.
	dump := storetest.DumpData(t, b.Store)
	for _, v := range []string{email, profileURL, name, strings.TrimPrefix(profileURL, "https://")} {
		if strings.Contains(strings.ToLower(dump), strings.ToLower(v)) {
			i := strings.Index(strings.ToLower(dump), strings.ToLower(v))
			t.Errorf("pg_dump still holds %q: …%s…", v, dump[max(0, i-200):min(len(dump), i+100)])
		}
		if strings.Contains(dump, hex.EncodeToString([]byte(v))) {
			t.Errorf("pg_dump still holds %q in a bytea", v)
		}
	}
	for _, o := range others {
		for _, v := range []string{*o.Email, *o.FoundProfileURL, *o.FullName} {
			if !strings.Contains(dump, v) {
				t.Errorf("pg_dump lost %q, a person not erased", v)
			}
		}
	}
	if !strings.Contains(dump, "https://platform.example/in/nora-kell") {
		t.Error("pg_dump lost the other person of job 2")
	}
	t.Logf("pg_dump --data-only: %d bytes; 0 occurrences of %q, %q or %q; the %d other people of job 1 and the other of job 2 all present",
		len(dump), email, profileURL, name, len(others))
	if got := len(r.results(t, job1)); got != len(slugs)-1 {
		t.Errorf("job 1 has %d results after the erasure, want %d", got, len(slugs)-1)
	}

	// The feed: a deleted line for each line withdrawn, after the ETL's position.
	var after feedPage
	if code := r.call(t, etlKey, http.MethodGet, fmt.Sprintf("/v1/results?since=%d", feed.NextSince), "", &after); code != http.StatusOK {
		t.Fatalf("feed: %d", code)
	}
	deleted := 0
	for _, l := range after.Results {
		if l.Kind != store.FeedDeleted || l.DeletedSeq == nil {
			t.Errorf("line %d after the erasure: kind %s", l.Seq, l.Kind)
			continue
		}
		if _, ok := before[*l.DeletedSeq]; !ok {
			t.Errorf("deleted line %d withdraws %d, a line the ETL never read", l.Seq, *l.DeletedSeq)
		}
		deleted++
	}
	if int64(deleted) != receipt.Receipt["results_feed_log"] {
		t.Errorf("%d deleted lines, the receipt says %d lines withdrawn", deleted, receipt.Receipt["results_feed_log"])
	}

	// The suppression: the same person uploaded again is skipped, without a vendor call,
	// and the dry run prices only the other row.
	again := `{"name": "again", "lookups": ["profile", "email"], "rows": [
		{"ref": "s1", "email": "` + email + `"}, {"ref": "s2", "profile_url": "` + profileURL + `"}, {"ref": "s3", "profile_url": "https://platform.example/in/pia-lund"}]}`
	var est struct {
		Rows, Suppressed, Distinct int
	}
	if code := r.call(t, apiKey, http.MethodPost, "/v1/jobs?dry_run=true", again, &est); code != http.StatusOK ||
		est.Rows != 3 || est.Suppressed != 2 || est.Distinct != 1 {
		t.Errorf("dry run of the upload again: %d %+v, want 3 rows, 2 suppressed, 1 distinct", code, est)
	}
	job3 := r.submit(t, again)
	want := "suppressed: erased on " + receipt.CreatedAt.Format(time.DateOnly)
	for _, x := range r.results(t, job3) {
		suppressed := x.Ref == "s1" || x.Ref == "s2"
		if suppressed != (x.State == "skipped" && x.Reason == want) {
			t.Errorf("job 3 row %s: %s (%q), want suppressed %v", x.Ref, x.State, x.Reason, suppressed)
		}
	}
	if got := vendorCallsFor(b, email, profileURL); got != callsBefore {
		t.Errorf("the vendor was asked about the erased person %d times after the erasure", got-callsBefore)
	}

	// Listed; lifted; then bought again.
	var list struct{ Erasures []store.Erasure }
	r.call(t, apiKey, http.MethodGet, "/v1/erasures", "", &list)
	if len(list.Erasures) != 1 || list.Erasures[0].ID != receipt.ID || list.Erasures[0].LiftedAt != nil {
		t.Fatalf("erasures: %+v", list)
	}
	var lifted store.Erasure
	if code := r.call(t, apiKey, http.MethodDelete, "/v1/erasures/"+receipt.ID, "", &lifted); code != http.StatusOK || lifted.LiftedAt == nil {
		t.Fatalf("lift: %d %+v", code, lifted)
	}
	job4 := r.submit(t, `{"name": "lifted", "lookups": ["profile"], "rows": [{"ref": "l1", "profile_url": "`+profileURL+`"}]}`)
	if x := r.results(t, job4); len(x) != 1 || x[0].State == "skipped" {
		t.Errorf("after the lift: %+v", x)
	}
	if vendorCallsFor(b, email, profileURL) == callsBefore {
		t.Error("after the lift the person was not looked up again")
	}

	// A budget change (of a job its budget paused; a finished job's budget
	// cannot change, 409), a limit change, a retention window.
	if code := r.call(t, apiKey, http.MethodPatch, "/v1/jobs/"+job2, `{"budget_credits": 900}`, nil); code != http.StatusConflict {
		t.Fatalf("budget of a completed job: %d, want 409", code)
	}
	var paused status
	if code := r.call(t, apiKey, http.MethodPost, "/v1/jobs", `{"name": "no budget", "budget_credits": 0, "rows": [{"ref": "b1", "profile_url": "https://platform.example/in/budget-check"}]}`, &paused); code != http.StatusCreated {
		t.Fatalf("submit with budget 0: %d", code)
	}
	b.WaitJob(t, paused.ID, domain.JobPaused)
	if code := r.call(t, apiKey, http.MethodPatch, "/v1/jobs/"+paused.ID, `{"budget_credits": 900}`, nil); code != http.StatusOK {
		t.Fatalf("budget: %d", code)
	}
	b.WaitJob(t, paused.ID, domain.JobCompleted)
	if code := r.call(t, apiKey, http.MethodPatch, "/v1/account", `{"monthly_allowance": 500000}`, nil); code != http.StatusOK {
		t.Fatalf("allowance: %d", code)
	}
	var acct struct{ Retention *string }
	if code := r.call(t, apiKey, http.MethodPatch, "/v1/account", `{"retention": "30d"}`, &acct); code != http.StatusOK || acct.Retention == nil || *acct.Retention != "30d" {
		t.Fatalf("retention: %d %+v", code, acct)
	}

	// Retention on a clock moved 31 days on: every job's rows go, the jobs stay with their counts and credits.
	var st1 status
	r.call(t, apiKey, http.MethodGet, "/v1/jobs/"+job1, "", &st1)
	future := time.Now().Add(31 * 24 * time.Hour)
	purger := maintenance.NewRetentionPurger(b.Store, maintenance.RetentionPurgerConfig{Now: func() time.Time { return future }, Batch: 5})
	for i := 0; ; i++ {
		n, err := purger.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if i > 100 {
			t.Fatal("the purge does not end")
		}
	}
	var purged struct {
		status
		PurgedAt *time.Time `json:"purged_at"`
	}
	r.call(t, apiKey, http.MethodGet, "/v1/jobs/"+job1, "", &purged)
	if purged.PurgedAt == nil || fmt.Sprint(purged.Rows) != fmt.Sprint(st1.Rows) || purged.Credits.Spent != st1.Credits.Spent {
		t.Errorf("job 1 after the purge: %+v, purged_at %v; before: %+v", purged.status, purged.PurgedAt, st1)
	}
	if got := r.results(t, job1); len(got) != 0 {
		t.Errorf("job 1 has %d results after the purge", len(got))
	}
	if jobsN, rowsN := storetest.JobsAndRows(t, b.Store); jobsN != 5 || rowsN != 0 {
		t.Errorf("after the purge: %d jobs, %d rows; want 5 jobs, 0 rows", jobsN, rowsN)
	}
	if dump := storetest.DumpData(t, b.Store); strings.Contains(dump, *others[0].Email) {
		t.Errorf("the purge left %q", *others[0].Email)
	}

	// Keys change; the audit log has a line of each action, the ETL key's among them.
	if err := b.Store.RevokeAPIKey(ctx, etlID); err != nil {
		t.Fatal(err)
	}
	var audit struct {
		Lines     []store.AuditLine `json:"lines"`
		NextSince int64             `json:"next_since"`
	}
	if code := r.call(t, apiKey, http.MethodGet, "/v1/audit?since=0&limit=1000", "", &audit); code != http.StatusOK {
		t.Fatalf("audit: %d", code)
	}
	var out bytes.Buffer
	seen := map[string]bool{}
	for _, l := range audit.Lines {
		fmt.Fprintf(&out, "%d %s %s key=%s %s subject=%s rows=%d\n", l.Seq, l.At.Format(time.RFC3339), l.Tenant, l.KeyID, l.Action, l.Subject, l.Rows)
		seen[l.Action] = true
		if l.Action == store.AuditFeedRead && l.KeyID != etlID {
			t.Errorf("a feed read by key %s, want the ETL key %s", l.KeyID, etlID)
		}
	}
	t.Logf("audit log:\n%s", out.String())
	for _, a := range []string{store.AuditKeyCreated, store.AuditResultsDownload, store.AuditFeedRead, store.AuditErasure, store.AuditErasureLifted,
		store.AuditBudget, store.AuditLimits, store.AuditRetention, store.AuditRetentionPurge, store.AuditKeyRevoked} {
		if !seen[a] {
			t.Errorf("no audit line of %s", a)
		}
	}
}

// vendorCallsFor counts the vendor's billed calls whose inputs name the email or the profile URL.
func vendorCallsFor(b *jobstest.Bundle, email, profileURL string) int {
	n := 0
	for _, e := range b.Vendor.Ledger() {
		for _, in := range e.Inputs {
			if strings.Contains(in, email) || strings.Contains(in, strings.TrimPrefix(profileURL, "https://")) {
				n++
				break
			}
		}
	}
	return n
}
