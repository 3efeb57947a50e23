package enrichtest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
)

// The shapes the real vendor answers in, beyond the condensed contract.

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	return b.String()
}

func postBulk(t *testing.T, srvURL string, client *http.Client, body string, gz bool) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", srvURL+"/v5/person/bulk", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", key)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return reply{resp.StatusCode, resp.Header, b.String()}
}

// A gzipped bulk body is read; min_likelihood in a JSON body is a number
// (a string is that item's 400); metadata strings are echoed as sent.
func TestPDLBulkGzipAndTypes(t *testing.T) {
	t.Parallel()
	p, srv := start(t, nil)
	l := lookups(p, 1, true, "com")[0]
	body := `{"requests":[{"params":{"name":"` + l.Name + `","company":"` + l.Company + `","min_likelihood":6},"metadata":{"id":"0"}},` +
		`{"params":{"name":"` + l.Name + `","company":"` + l.Company + `","min_likelihood":"6"},"metadata":{"id":"1"}}]}`
	r := postBulk(t, srv.URL, srv.Client(), gzipped(t, body), true)
	var items []struct {
		Status   int               `json:"status"`
		Metadata map[string]string `json:"metadata"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &items) != nil || len(items) != 2 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for _, it := range items {
		want := map[string]int{"0": 200, "1": 400}[it.Metadata["id"]]
		if it.Status != want {
			t.Fatalf("item %q: %d, want %d (%s)", it.Metadata["id"], it.Status, want, r.body)
		}
	}
	if r := postBulk(t, srv.URL, srv.Client(), body, true); r.status != 400 {
		t.Fatalf("a body marked gzip that is not: %d", r.status)
	}
}

// required is an expression: AND, OR, parentheses; an unknown field or a
// broken expression is a 400.
func TestPDLRequiredExpressions(t *testing.T) {
	t.Parallel()
	p, srv := start(t, func(o *enrichtest.PDLOptions) { o.WorkEmailRate, o.PersonalEmailRate, o.MobileRate = 1, 0, 0 })
	l := lookups(p, 1, true, "com")[0]
	for expr, want := range map[string]int{
		"work_email":                                       200,
		"mobile_phone":                                     404,
		"mobile_phone OR work_email":                       200,
		"mobile_phone AND work_email":                      404,
		"(mobile_phone OR phone_numbers)":                  404,
		"linkedin_url AND (personal_emails OR work_email)": 200,
		"work_email, mobile_phone":                         404,
		"favourite_colour":                                 400,
		"(work_email":                                      400,
		"work_email OR":                                    400,
	} {
		if r := call(t, srv, "GET", enrichPath(l)+"&required="+strings.ReplaceAll(strings.ReplaceAll(expr, " ", "+"), ",", "%2C"), key, ""); r.status != want {
			t.Errorf("required %q: %d, want %d (%s)", expr, r.status, want, r.body)
		}
	}
}

// A lookup by name at a company the fake does not know may be answered
// with a namesake who once worked there: likelihood 2, employed elsewhere
// now, the company asked in a past experience; billed; refused by a floor.
func TestPDLNamesake(t *testing.T) {
	t.Parallel()
	p, srv := start(t, func(o *enrichtest.PDLOptions) { o.HitRate, o.WrongPersonRate = 0, 1 })
	l := enrichtest.Lookup{Name: "Jane Doe", Company: "acme.de"}
	r := call(t, srv, "GET", enrichPath(l), key, "")
	var m struct {
		Likelihood int `json:"likelihood"`
		Data       struct {
			FullName          string `json:"full_name"`
			JobCompanyWebsite string `json:"job_company_website"`
			Experience        []struct {
				Company struct {
					Website string `json:"website"`
				} `json:"company"`
				EndDate *string `json:"end_date"`
			} `json:"experience"`
		} `json:"data"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &m) != nil || m.Likelihood != 2 || m.Data.FullName != "jane doe" ||
		m.Data.JobCompanyWebsite == "acme.de" || len(m.Data.Experience) != 2 || m.Data.Experience[1].Company.Website != "acme.de" ||
		m.Data.Experience[1].EndDate == nil || p.TotalBilled() != 1 {
		t.Fatalf("%d %s, billed %d", r.status, r.body, p.TotalBilled())
	}
	if r := call(t, srv, "GET", enrichPath(l)+"&min_likelihood=3", key, ""); r.status != 404 || p.TotalBilled() != 1 {
		t.Fatalf("with a floor: %d, billed %d", r.status, p.TotalBilled())
	}
	if r := call(t, srv, "GET", enrichPath(enrichtest.Lookup{Email: "jane@acme.de"}), key, ""); r.status != 404 {
		t.Fatalf("an email is no name: %d", r.status)
	}
}

// A Free plan's record has true/false for its contact fields; the key's
// overage shows in the headers, and past it, 402.
func TestPDLFreePlanAndOverage(t *testing.T) {
	t.Parallel()
	p, srv := start(t, func(o *enrichtest.PDLOptions) {
		o.FreePlan, o.WorkEmailRate, o.MobileRate, o.StartCredits, o.OverageCredits = true, 1, 0, 1, 1
	})
	ls := lookups(p, 3, true, "com")
	r := call(t, srv, "GET", enrichPath(ls[0]), key, "")
	if r.status != 200 || !strings.Contains(r.body, `"work_email":true`) || !strings.Contains(r.body, `"mobile_phone":false`) ||
		r.header.Get("X-TotalLimit-Purchased-Remaining") != "0" || r.header.Get("X-TotalLimit-Overages-Remaining") != "1" ||
		r.header.Get("X-TotalLimit-Remaining") != "1" {
		t.Fatalf("%d %s %v", r.status, r.body, r.header)
	}
	r = call(t, srv, "GET", enrichPath(ls[1]), key, "")
	if r.status != 200 || r.header.Get("X-TotalLimit-Overages-Remaining") != "0" || r.header.Get("X-TotalLimit-Remaining") != "0" {
		t.Fatalf("into overage: %d %v", r.status, r.header)
	}
	if r := call(t, srv, "GET", enrichPath(ls[2]), key, ""); r.status != 402 || p.TotalBilled() != 2 {
		t.Fatalf("past the overage: %d, billed %d", r.status, p.TotalBilled())
	}
}
