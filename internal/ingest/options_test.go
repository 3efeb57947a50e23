package ingest

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

func TestParseOptions(t *testing.T) {
	t.Parallel()
	def := JobOptions{Lookups: []domain.Stage{domain.StageProfile}, MaxAge: 720 * time.Hour}
	with := func(f func(*JobOptions)) JobOptions {
		o := def
		f(&o)
		return o
	}
	tests := []struct {
		name    string
		query   string
		lim     Limits
		want    JobOptions
		details []at // nil: success
	}{
		{name: "defaults", query: "", want: def},
		{name: "empty values are absent", query: "name=&lookups=&roles=&budget_credits=&max_age=", want: def},
		{
			name:  "the api.md example",
			query: "lookups=profile,email&roles=VP%20Sales&budget_credits=500",
			want: with(func(o *JobOptions) {
				o.Lookups, o.Roles, o.BudgetCredits = []domain.Stage{domain.StageProfile, domain.StageEmail}, []string{"VP Sales"}, ptr[int64](500)
			}),
		},
		{name: "lookups ordered and deduplicated", query: "lookups=phone,%20Email%20,profile,email", want: with(func(o *JobOptions) {
			o.Lookups = []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone}
		})},
		{name: "lookups repeated", query: "lookups=email&lookups=phone", want: with(func(o *JobOptions) { o.Lookups = []domain.Stage{domain.StageEmail, domain.StagePhone} })},
		{
			name:  "roles comma-separated, repeated, trimmed, deduplicated",
			query: "roles=VP%20Sales,%20Head%20of%20Marketing%20&roles=CTO&roles=vp%20sales",
			want:  with(func(o *JobOptions) { o.Roles = []string{"VP Sales", "Head of Marketing", "CTO"} }),
		},
		{name: "a quoted role with a comma", query: `roles=` + url.QueryEscape(`"VP Sales, EMEA", CTO`), want: with(func(o *JobOptions) { o.Roles = []string{"VP Sales, EMEA", "CTO"} })},
		{name: "budget 0", query: "budget_credits=0", want: with(func(o *JobOptions) { o.BudgetCredits = ptr[int64](0) })},
		{name: "max_age in days", query: "max_age=30d", want: def},
		{name: "max_age zero", query: "max_age=0", want: with(func(o *JobOptions) { o.MaxAge = 0 })},
		{name: "max_age a Go duration", query: "max_age=1h30m", want: with(func(o *JobOptions) { o.MaxAge = 90 * time.Minute })},
		{name: "name trimmed", query: "name=%20Q4%20DACH%20", want: with(func(o *JobOptions) { o.Name = "Q4 DACH" })},
		{name: "unknown lookup", query: "lookups=profile,sms", details: []at{{0, "lookups", `lookups item 2: unknown lookup "sms"`}}},
		{name: "verify after the row stages", query: "lookups=verify,email", want: with(func(o *JobOptions) {
			o.Lookups = []domain.Stage{domain.StageEmail, domain.StageVerify}
		})},
		{name: "verify without email", query: "lookups=profile,verify", details: []at{{0, "lookups", "verify checks the emails the job finds: ask email too"}}},
		{name: "empty role", query: "roles=a,,b", details: []at{{0, "roles", "roles item 2 is empty"}}},
		{name: "too many roles", query: "roles=a,b,c", lim: Limits{MaxRoles: 2}, details: []at{{0, "roles", "3 roles; the limit is 2"}}},
		{name: "role too long", query: "roles=" + strings.Repeat("é", 201), details: []at{{0, "roles", "201 characters; the limit is 200"}}},
		{name: "role with a control character", query: "roles=a%00b", details: []at{{0, "roles", "U+0000"}}},
		{name: "role not UTF-8", query: "roles=a%FFb", details: []at{{0, "roles", "UTF-8"}}},
		{name: "broken role quoting", query: `roles=` + url.QueryEscape(`"VP`), details: []at{{0, "roles", "cannot split"}}},
		{name: "negative budget", query: "budget_credits=-1", details: []at{{0, "budget_credits", "0 or more"}}},
		{name: "budget not a number", query: "budget_credits=5e3", details: []at{{0, "budget_credits", "not a whole number"}}},
		{name: "negative max_age", query: "max_age=-1h", details: []at{{0, "max_age", "negative"}}},
		{name: "fractional days", query: "max_age=1.5d", details: []at{{0, "max_age", "not a duration"}}},
		{name: "huge days", query: "max_age=999999999999d", details: []at{{0, "max_age", "too long"}}},
		{name: "name too long", query: "name=" + strings.Repeat("x", 201), details: []at{{0, "name", "201 characters"}}},
		{name: "repeated name", query: "name=a&name=b", details: []at{{0, "name", "given 2 times"}}},
		{name: "unknown parameter", query: "role=CTO", details: []at{{0, "role", `unknown parameter "role"`}}},
		{name: "columns as pairs, encoding and sheet", query: "columns=company:Account%20Name,%22domain:Web,%20site%22&encoding=CP1252&sheet=%20Leads%20",
			want: with(func(o *JobOptions) {
				o.Columns, o.Encoding, o.Sheet = map[string]string{"company": "Account Name", "domain": "Web, site"}, EncodingWindows1252, "Leads"
			})},
		{name: "columns as a JSON object, repeated", query: "columns=%7B%22Company%22:%22Org%22%7D&columns=role:Title",
			want: with(func(o *JobOptions) { o.Columns = map[string]string{"company": "Org", "role": "Title"} })},
		{name: "columns errors", query: "columns=company:A,firm:B", details: []at{{0, "columns", `unknown field "firm"`}}},
		{name: "columns twice to one header", query: "columns=company:A,name:a", details: []at{{0, "columns", `company and name are both mapped to "a"`}}},
		{name: "columns not a pair", query: "columns=Account%20Name", details: []at{{0, "columns", "not field:Header"}}},
		{name: "unknown encoding", query: "encoding=ebcdic", details: []at{{0, "encoding", "utf-8, windows-1252"}}},
		{
			name:    "all errors at once",
			query:   "budget_credits=-5&lookups=fax&max_age=soon",
			details: []at{{0, "lookups", "fax"}, {0, "budget_credits", ""}, {0, "max_age", "soon"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseOptions(v, tt.lim)
			if tt.details != nil {
				checkResult(t, err, nil, nil, CodeInvalidOptions, tt.details)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestJobRequestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     JobRequest
		want    JobOptions
		details []at
	}{
		{
			name: "values",
			req: JobRequest{Name: "Q4", Roles: []string{"VP Sales", " CTO ", "cto"}, Lookups: []string{"email", "profile"},
				BudgetCredits: ptr[int64](5000), MaxAge: "7d"},
			want: JobOptions{Name: "Q4", Roles: []string{"VP Sales", "CTO"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail},
				BudgetCredits: ptr[int64](5000), MaxAge: 7 * 24 * time.Hour},
		},
		{name: "defaults", want: JobOptions{Lookups: []domain.Stage{domain.StageProfile}, MaxAge: 720 * time.Hour}},
		{
			name:    "errors name the array index",
			req:     JobRequest{Roles: []string{"a", ""}, Lookups: []string{"profile", "sms"}, BudgetCredits: ptr[int64](-1), MaxAge: "forever"},
			details: []at{{0, "lookups", "lookups[1]"}, {0, "roles", "roles[1] is empty"}, {0, "budget_credits", ""}, {0, "max_age", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.req.Options(Limits{})
			if tt.details != nil {
				checkResult(t, err, nil, nil, CodeInvalidOptions, tt.details)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// With DeferRoles a company-only row makes no lookup and is counted; the
// other rows are read as ever, and a bad row is still an error.
func TestDeferRoles(t *testing.T) {
	t.Parallel()
	csv := "name,company,role\nJane Doe,Acme,\n,Globex,\n,Initech,CTO\n"
	var got []Lookup
	sum, err := ParseCSV(strings.NewReader(csv), Options{DeferRoles: true}, DefaultLimits(), func(l Lookup) error {
		got = append(got, l)
		return nil
	})
	if err != nil || sum.Rows != 3 || sum.Lookups != 2 || sum.RowsNeedingRoles != 1 || len(got) != 2 || got[1].Name != "CTO" {
		t.Fatalf("summary %+v, lookups %+v, %v", sum, got, err)
	}
	sum, err = ParseCSV(strings.NewReader(csv), Options{DeferRoles: true, Roles: []string{"CEO"}}, DefaultLimits(), nil)
	if err != nil || sum.Lookups != 4 || sum.RowsNeedingRoles != 0 {
		t.Fatalf("with roles: %+v, %v", sum, err)
	}
	if _, err := ParseCSV(strings.NewReader("name,company\nJane,\n"), Options{DeferRoles: true}, DefaultLimits(), nil); err == nil {
		t.Fatal("a name without a company was accepted")
	}
}

// The vendors option: names as the vendors file spells them, each once, at
// most MaxVendors, in the order given.
func TestVendorsOption(t *testing.T) {
	t.Parallel()
	o, err := ParseOptions(url.Values{"vendors": {"pdl, seed"}}, DefaultLimits())
	if err != nil || !slices.Equal(o.Vendors, []string{"pdl", "seed"}) {
		t.Errorf("vendors %v, %v", o.Vendors, err)
	}
	for _, bad := range []string{"PDL", "pdl,pdl", "a b", strings.Repeat("x", 33), "a,b,c,d,e,f,g,h,i,j,k"} {
		if _, err := ParseOptions(url.Values{"vendors": {bad}}, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "vendors") {
			t.Errorf("vendors=%q: %v", bad, err)
		}
	}
	if o, err := ParseOptions(url.Values{}, DefaultLimits()); err != nil || o.Vendors != nil {
		t.Errorf("no vendors: %v, %v", o.Vendors, err)
	}
}
