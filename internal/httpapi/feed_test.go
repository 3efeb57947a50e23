package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

func TestResultsFeedAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "lookups=profile,email", "ref,profile_url,team\nr1,https://platform.example/in/a,x\nr2,https://platform.example/in/b,y\nr3,https://platform.example/in/c,z\n")
	other := b.mustCreate(t, keyB, "", "ref,profile_url\nb1,https://platform.example/in/q\n")

	get := func(key, query string) (*http.Response, feedPage) {
		t.Helper()
		resp, data := b.call(t, http.MethodGet, "/v1/results?"+query, key, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/results?%s: %d %s", query, resp.StatusCode, data)
		}
		return resp, decode[feedPage](t, data)
	}
	if _, p := get(keyA, ""); len(p.Results) != 0 || p.NextSince != 0 {
		t.Fatalf("before any result: %+v", p)
	}

	finishRows(t, b.Store, tenantA, job.ID, func(i int, r store.Row) store.Outcome {
		switch i {
		case 0:
			return store.Outcome{State: domain.RowMatched, StagesDone: []domain.Stage{domain.StageProfile, domain.StageEmail}, AnyMatch: true,
				Profile: &store.ProfileResult{ProfileURL: r.ProfileURL, Name: "Ann", Role: "CTO", Raw: []byte(`{}`)},
				Email:   &store.EmailResult{ProfileURL: r.ProfileURL, Email: "ann@example.com", Confidence: 0.9, Verified: true, Raw: []byte(`{}`)}}
		case 1:
			return store.Outcome{State: domain.RowNoMatch, StagesDone: []domain.Stage{domain.StageProfile}, NoMatches: []domain.Stage{domain.StageProfile}}
		default:
			return store.Outcome{State: domain.RowFailed, Reason: "vendor refused the input"} // a failure is no result
		}
	})
	finishRows(t, b.Store, tenantB, other.ID, func(int, store.Row) store.Outcome {
		return store.Outcome{State: domain.RowNoMatch, StagesDone: []domain.Stage{domain.StageProfile}, NoMatches: []domain.Stage{domain.StageProfile}}
	})

	// Page by page, one line a page.
	var lines []feedLine
	since := int64(0)
	for range 5 {
		resp, p := get(keyA, url.Values{"since": {fmt.Sprint(since)}, "limit": {"1"}}.Encode())
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
		}
		if len(p.Results) == 0 {
			if p.NextSince != since {
				t.Fatalf("empty page: next_since %d, want %d", p.NextSince, since)
			}
			break
		}
		if p.NextSince != p.Results[len(p.Results)-1].Seq || p.NextSince <= since {
			t.Fatalf("next_since %d after %d with lines %+v", p.NextSince, since, p.Results)
		}
		lines = append(lines, p.Results...)
		since = p.NextSince
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (profile and email of r1, no-match of r2): %+v", len(lines), lines)
	}
	prof, email, nm := lines[0], lines[1], lines[2]
	if prof.Kind != "profile" || prof.Ref != "r1" || prof.JobID != job.ID || prof.Row != 1 || deref(prof.FullName) != "Ann" ||
		deref(prof.CurrentRole) != "CTO" || prof.Extra["team"] != "x" || prof.Email != nil || prof.FetchedAt == nil || prof.Source != "vendor" {
		t.Errorf("profile line: %+v", prof)
	}
	if email.Kind != "email" || deref(email.Email) != "ann@example.com" || email.EmailConfidence.String() != "0.9" ||
		!*email.EmailVerified || deref(email.FoundProfileURL) != "https://platform.example/in/a" || email.FullName != nil {
		t.Errorf("email line: %+v", email)
	}
	if nm.Kind != "no_match" || nm.Stage != domain.StageProfile || nm.Ref != "r2" || nm.FoundProfileURL != nil {
		t.Errorf("no-match line: %+v", nm)
	}

	// The other tenant sees its own line only.
	if _, p := get(keyB, "since=0"); len(p.Results) != 1 || p.Results[0].Ref != "b1" || p.Results[0].JobID != other.ID {
		t.Fatalf("tenant B: %+v", p)
	}

	for _, q := range []string{"since=-1", "since=x", "limit=0", "limit=abc"} {
		resp, data := b.call(t, http.MethodGet, "/v1/results?"+q, keyA, nil)
		if resp.StatusCode != http.StatusBadRequest || apiErr(t, data).Code != "invalid_parameter" {
			t.Errorf("?%s: %d %s", q, resp.StatusCode, data)
		}
	}
	if resp, _ := b.call(t, http.MethodGet, "/v1/results", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a key: %s", resp.Status)
	}
}
