package ingest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
)

func ptr[T any](v T) *T { return &v }

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		lim     Limits
		want    *JobRequest
		code    string
		details []at
	}{
		{
			name: "the api.md example",
			in: `{
			  "name": "Q4 outbound, DACH",
			  "rows": [
			    {"ref": "crm-0001", "company": "Acme GmbH"},
			    {"ref": "crm-0002", "profile_url": "https://platform.example/in/jane-doe"},
			    {"ref": "crm-0003", "name": "John Roe", "company": "Beta AG", "extra": {"owner": "anna"}}
			  ],
			  "roles": ["VP Sales", "Head of Marketing"],
			  "lookups": ["profile", "email"],
			  "budget_credits": 5000,
			  "max_age": "720h"
			}` + "\n",
			want: &JobRequest{
				Name: "Q4 outbound, DACH",
				Rows: []RowIn{
					{Ref: "crm-0001", Company: "Acme GmbH"},
					{Ref: "crm-0002", ProfileURL: "https://platform.example/in/jane-doe"},
					{Ref: "crm-0003", Name: "John Roe", Company: "Beta AG", Extra: map[string]string{"owner": "anna"}},
				},
				Roles:         []string{"VP Sales", "Head of Marketing"},
				Lookups:       []string{"profile", "email"},
				BudgetCredits: ptr[int64](5000),
				MaxAge:        "720h",
			},
		},
		{
			name: "null is absent, a BOM is ignored, an empty extra is nil",
			in:   "\ufeff" + `{"name": null, "rows": [{"company": "Acme", "email": null, "extra": {}}], "roles": null, "budget_credits": null}`,
			want: &JobRequest{Rows: []RowIn{{Company: "Acme"}}},
		},
		{
			name:    "unknown job field",
			in:      `{"rows": [{"company": "Acme"}], "callback": "https://x"}`,
			code:    CodeMalformedJSON,
			details: []at{{0, "callback", `unknown field "callback" (known: name, rows`}},
		},
		{
			name:    "unknown row fields, with their rows",
			in:      `{"rows": [{"company": "Acme"}, {"company": "Beta", "phone": "123", "Name": "x"}]}`,
			code:    CodeMalformedJSON,
			details: []at{{2, "phone", `rows[1]: unknown field "phone"`}, {2, "Name", `unknown field "Name"`}},
		},
		{
			name: "wrong types, with their places",
			in: `{"name": 7, "rows": [{"company": "A"}, {"company": "B"}, {"company": "C"}, {"company": 42, "ref": ["x"]},
			     "row", {"extra": {"a": 1, "b": "ok"}}, {"extra": ["x"]}], "roles": "VP Sales", "lookups": ["profile", 2],
			     "budget_credits": 1.5, "max_age": 720}`,
			code: CodeMalformedJSON,
			details: []at{
				{0, "name", "name: expected string, got number"},
				{4, "company", "rows[3].company: expected string, got number"},
				{4, "ref", "rows[3].ref: expected string, got array"},
				{5, "", "rows[4]: expected object, got string"},
				{6, "extra.a", `rows[5].extra["a"]: expected string, got number`},
				{7, "extra", "rows[6].extra: expected object of strings, got array"},
				{0, "roles", "roles: expected array of strings, got string"},
				{0, "lookups", "lookups[1]: expected string, got number"},
				{0, "budget_credits", "expected a whole number, got number 1.5"},
				{0, "max_age", "max_age: expected string"},
			},
		},
		{
			name:    "rows not an array",
			in:      `{"rows": {"company": "Acme"}}`,
			code:    CodeMalformedJSON,
			details: []at{{0, "rows", "rows: expected array of row objects, got object"}},
		},
		{
			name:    "duplicate fields",
			in:      `{"rows": [{"company": "A", "company": "B", "extra": {"a": "1", "a": "2"}}], "name": "x", "name": "y"}`,
			code:    CodeMalformedJSON,
			details: []at{{1, "company", "appears twice"}, {1, "extra.a", `rows[0].extra["a"]: appears twice`}, {0, "name", "appears twice"}},
		},
		{
			name:    "MaxErrors",
			in:      `{"rows": [{"a": 1}, {"b": 1}, {"c": 1}]}`,
			lim:     Limits{MaxErrors: 2},
			code:    CodeMalformedJSON,
			details: []at{{1, "a", ""}, {2, "b", ""}},
		},
		{name: "trailing garbage", in: `{"rows": [{"company": "A"}]} x`, code: CodeMalformedJSON},
		{name: "a second object", in: `{"rows": [{"company": "A"}]}{}`, code: CodeMalformedJSON},
		{name: "trailing whitespace is fine", in: "{\"rows\": [{\"company\": \"A\"}]} \r\n\t", want: &JobRequest{Rows: []RowIn{{Company: "A"}}}},
		{name: "syntax error", in: `{"rows": [}`, code: CodeMalformedJSON},
		{name: "trailing comma", in: `{"rows": [{"company": "A"},]}`, code: CodeMalformedJSON},
		{name: "truncated", in: `{"rows": [{"company": "A"}`, code: CodeMalformedJSON},
		{name: "not an object", in: `[{"company": "A"}]`, code: CodeMalformedJSON},
		{name: "a bare string", in: `"rows"`, code: CodeMalformedJSON},
		{name: "a number too large for float64", in: `1e309`, code: CodeMalformedJSON},
		{name: "a row that is a huge number", in: `{"rows": [1e400]}`, code: CodeMalformedJSON, details: []at{{1, "", "rows[0]: expected object, got number"}}},
		{name: "not UTF-8", in: "{\"rows\": [{\"company\": \"Ac\xffme\"}]}", code: CodeMalformedJSON},
		{name: "UTF-16", in: "\xff\xfe{\x00}\x00", code: CodeMalformedJSON},
		{name: "truncated UTF-8 at the end", in: "{\"rows\": []}\xc3", code: CodeMalformedJSON},
		{name: "UTF-8 is fine", in: `{"rows": [{"company": "Müller & Söhne 株式会社"}]}`, want: &JobRequest{Rows: []RowIn{{Company: "Müller & Söhne 株式会社"}}}},
		{name: "empty body", in: "", code: CodeEmptyUpload},
		{name: "whitespace body", in: " \n", code: CodeEmptyUpload},
		{name: "no rows field", in: `{"name": "x"}`, code: CodeEmptyUpload},
		{name: "empty rows", in: `{"rows": []}`, code: CodeEmptyUpload},
		{name: "larger than MaxBytes", in: `{"rows": [{"company": "Acme"}]}`, lim: Limits{MaxBytes: 20}, code: CodeTooLarge},
		{name: "more rows than MaxLookups", in: `{"rows": [{}, {}, {}]}`, lim: Limits{MaxLookups: 2}, code: CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeJSON(strings.NewReader(tt.in), tt.lim)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got  %+v\nwant %+v", got, tt.want)
				}
				return
			}
			checkResult(t, err, nil, nil, tt.code, tt.details)
		})
	}
}

func TestDecodeJSONStopsReading(t *testing.T) {
	t.Parallel()
	src := &countingReader{r: strings.NewReader(`{"rows": [` + strings.Repeat(`{"company": "Acme"},`, 100_000) + `{}]}`)}
	_, err := DecodeJSON(src, Limits{MaxLookups: 10})
	checkResult(t, err, nil, nil, CodeTooLarge, nil)
	if src.n > 16<<10 {
		t.Errorf("read %d bytes after the 10th row", src.n)
	}
	src = &countingReader{r: &repeatReader{b: ' ', n: 10 << 20}}
	_, err = DecodeJSON(src, Limits{MaxBytes: 1 << 20})
	checkResult(t, err, nil, nil, CodeTooLarge, nil)
	if src.n > 1<<20+1 {
		t.Errorf("read %d bytes, past MaxBytes", src.n)
	}
}

func TestExpandRows(t *testing.T) {
	t.Parallel()
	roles := []string{"VP Sales", "CTO"}
	tests := []struct {
		name    string
		rows    []RowIn
		roles   []string
		lim     Limits
		want    []Lookup
		code    string
		details []at
	}{
		{
			name: "kinds and expansion",
			rows: []RowIn{
				{Ref: "crm-0001", Company: " Acme GmbH ", Extra: map[string]string{"owner": "anna"}},
				{Ref: "crm-0002", ProfileURL: "https://platform.example/in/jane-doe/"},
				{Ref: "crm-0003", Name: "John Roe", Company: "Beta AG"},
				{Email: "Jane@Example.com"},
			},
			roles: roles,
			want: []Lookup{
				{Row: 1, Ref: "crm-0001", Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Acme GmbH", Role: "VP Sales", Extra: map[string]string{"owner": "anna"}},
				{Row: 1, Ref: "crm-0001", Kind: domain.InputNameCompany, Name: "CTO", Company: "Acme GmbH", Role: "CTO", Extra: map[string]string{"owner": "anna"}},
				{Row: 2, Ref: "crm-0002", Kind: domain.InputProfileURL, ProfileURL: "https://platform.example/in/jane-doe"},
				{Row: 3, Ref: "crm-0003", Kind: domain.InputNameCompany, Name: "John Roe", Company: "Beta AG"},
				{Row: 4, Kind: domain.InputEmail, Email: "jane@example.com"},
			},
		},
		{
			name: "row errors with positions",
			rows: []RowIn{
				{Company: "Acme"},
				{Name: "Jane"},
				{ProfileURL: "https://platform.example"},
				{Email: "jane"},
				{},
				{Company: "Beta", Name: "Bob\x07"},
				{Company: "Beta", Name: "Bob", Extra: map[string]string{"": "x", "b": "\x01"}},
			},
			code: CodeInvalidRows,
			details: []at{
				{1, "company", "needs roles"},
				{2, "company", "needs a company"},
				{3, "profile_url", "no path"},
				{4, "email", "not an email"},
				{5, "", "none of"},
				{6, "name", "U+0007"},
				{7, "extra.", "key empty"},
				{7, "extra.b", "U+0001"},
			},
		},
		{
			name: "too many extra fields",
			rows: []RowIn{{Company: "A", Name: "B", Extra: map[string]string{"a": "", "b": "", "c": ""}}},
			lim:  Limits{MaxColumns: 2},
			code: CodeInvalidRows, details: []at{{1, "extra", "3 fields; the limit is 2"}},
		},
		{
			// Each row within the cap, but the job's keys together past it:
			// they would be the CSV export's columns.
			name: "too many extra keys in a job",
			rows: []RowIn{{Company: "A", Name: "B", Extra: map[string]string{"a": "", "b": ""}},
				{Company: "A", Name: "C", Extra: map[string]string{"a": "", "c": ""}}},
			lim:  Limits{MaxColumns: 2},
			code: CodeInvalidRows, details: []at{{2, "extra.c", "at most 2 distinct extra keys"}},
		},
		{name: "no rows", code: CodeEmptyUpload},
		{name: "more lookups than MaxLookups", rows: []RowIn{{Company: "A"}, {Company: "B"}}, roles: roles, lim: Limits{MaxLookups: 3}, code: CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []Lookup
			err := ExpandRows(tt.rows, Options{Roles: tt.roles}, tt.lim, collect(&got))
			checkResult(t, err, got, tt.want, tt.code, tt.details)
		})
	}
}

// The error is what the API writes under "error".
func TestErrorJSON(t *testing.T) {
	t.Parallel()
	_, err := DecodeJSON(strings.NewReader(`{"rows": [{"company": 1}]}`), Limits{})
	b, _ := json.Marshal(map[string]any{"error": err})
	want := `{"error":{"code":"malformed_json","message":"the JSON body does not match the job schema","details":[{"row":1,"column":"company","message":"rows[0].company: expected string, got number"}]}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// A JSON job's columns take fields from the rows' "extra".
func TestExpandJSONColumns(t *testing.T) {
	t.Parallel()
	rows := []RowIn{
		{Ref: "a", Extra: map[string]string{"Account Name": "Acme", "Website": "https://www.acme.com/", "Tier": "A"}},
		{Ref: "b", Domain: "beta.io", Role: "CTO", Extra: map[string]string{"Tier": "B"}},
	}
	var got []Lookup
	sum, err := ExpandJSON(rows, Options{Roles: []string{"CFO"}, Columns: map[string]string{"company": "Account Name", "domain": "Website"}},
		DefaultLimits(), collect(&got))
	checkResult(t, err, got, []Lookup{
		{Row: 1, Ref: "a", Kind: domain.InputNameDomain, Name: "CFO", Company: "Acme", Domain: "acme.com", Role: "CFO", Extra: map[string]string{"Tier": "A"}},
		{Row: 2, Ref: "b", Kind: domain.InputNameDomain, Name: "CTO", Domain: "beta.io", Role: "CTO", Extra: map[string]string{"Tier": "B"}},
		{Row: 2, Ref: "b", Kind: domain.InputNameDomain, Name: "CFO", Domain: "beta.io", Role: "CFO", Extra: map[string]string{"Tier": "B"}},
	}, "", nil)
	if sum.Rows != 2 || sum.Lookups != 3 || len(sum.Columns) != 2 || sum.Columns["Website"] != "domain" || strings.Join(sum.Extra, ",") != "Tier" {
		t.Fatalf("summary %+v", sum)
	}
	// A mapped key that no row has is named; a bad mapped value names its place.
	_, err = ExpandJSON(rows, Options{Roles: []string{"CFO"}, Columns: map[string]string{"company": "Org"}}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeInvalidRows, []at{{0, "columns", `maps company to "Org", which no row has`}})
	_, err = ExpandJSON([]RowIn{{Name: "CTO", Extra: map[string]string{"Site": "127.0.0.1"}}}, Options{Columns: map[string]string{"domain": "Site"}}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeInvalidRows, []at{{1, "extra.Site", "IP address"}})
}
