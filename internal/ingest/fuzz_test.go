package ingest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
)

// fuzzLimits are small so the fuzzer reaches every limit.
var fuzzLimits = Limits{MaxBytes: 1 << 16, MaxLookups: 64, MaxColumns: 8, MaxCellBytes: 64, MaxRoles: 3, MaxErrors: 8}

var fuzzRoles = []string{"VP Sales", "Head of Marketing"}

func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"",
		"\ufeffprofile_url\nhttps://www.Platform.example/in/Jane-Doe/?x=1#y\n",
		"ref,profile_url,name,company,email,notes\r\nr1,http://platform.example:80/in/a//,,,,n\r\nr2,,,,A@B.example,\r\n",
		"ref,company,tier\nc1,Acme GmbH,A\nc2,\"Beta, AG\",\"multi\r\nline\"\n",
		"company,name\r\nAcme,Jane\n\nBeta,John\r\n,,\nGamma,Joe",
		"company,name\nAcme,\"Jane\nBeta,Jo\"hn\n",
		"company,name\nAcme\nBeta,John,x\n",
		"company,name,Company\nA,b,c\n",
		"email\nJane <j@x.example>\n\"\"\"j d\"\"@x.example\"\nj@x\n",
		"company,name,,\nAcme,Jane,,x\n",
		"company,name\nAc\xffme,Ja\x01ne\n",
		"name\nJane\n",
		"company,name\n\"" + strings.Repeat(`""`, 40) + "\",x\n",
		"Company Name;Website;Job Title\nM\xfcller;https://www.M\xfcller.de/;CTO\n",
		"sep=;\r\nOrganisation;Title;Full Name\r\nAcme;CTO;\r\n",
		"\xff\xfec\x00o\x00m\x00p\x00a\x00n\x00y\x00\n\x00A\x00\n\x00",
		"Email Address\tFirst Name\tLast Name\nj@x.example\tJane\tDoe\n",
		"Account Name,Company Name\nA,B\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, withRoles bool) {
		var roles []string
		if withRoles {
			roles = fuzzRoles
		}
		var got []Lookup
		err := csvErr(bytes.NewReader(data), Options{Roles: roles}, fuzzLimits, collect(&got))
		for _, l := range got {
			checkLookup(t, l)
		}
		if err != nil {
			checkError(t, err, fuzzLimits)
			return
		}
		if len(got) == 0 {
			t.Fatal("no error and no lookups")
		}

		// Round trip: write the emitted rows as CSV, parse again, get the same.
		re, rowOf := encodeCSV(t, got, roles)
		big := Limits{MaxBytes: 1 << 24, MaxCellBytes: 1 << 12}
		var again []Lookup
		if err := csvErr(bytes.NewReader(re), Options{Roles: roles}, big, collect(&again)); err != nil {
			t.Fatalf("re-encoded upload fails: %v\n%q", err, re)
		}
		want := slices.Clone(got)
		for i := range want {
			want[i].Row = rowOf[want[i].Row]
		}
		if !reflect.DeepEqual(again, want) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v\nCSV %q", again, want, re)
		}
	})
}

// encodeCSV writes one CSV row per source row of lookups (a company expanded
// to roles is one company-only row again, a row's own title its role cell)
// and maps old row numbers to new.
func encodeCSV(t *testing.T, ls []Lookup, roles []string) ([]byte, map[int]int) {
	var extra []string
	for k := range ls[0].Extra {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	write := func(rec []string) {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	write(append([]string{"ref", "profile_url", "name", "company", "domain", "email", "role"}, extra...))
	rowOf := map[int]int{}
	byRow := map[int][]Lookup{}
	for _, l := range ls {
		byRow[l.Row] = append(byRow[l.Row], l)
	}
	for _, l := range ls {
		if _, done := rowOf[l.Row]; done {
			continue
		}
		rowOf[l.Row] = len(rowOf) + 1
		name, role := l.Name, l.Role
		if role != "" && name == role {
			name = ""
			if expandedOnly(byRow[l.Row], roles) {
				role = ""
			}
		}
		rec := []string{l.Ref, l.ProfileURL, name, l.Company, l.Domain, l.Email, role}
		for _, k := range extra {
			rec = append(rec, l.Extra[k])
		}
		write(rec)
	}
	w.Flush()
	return b.Bytes(), rowOf
}

// expandedOnly reports whether a row's lookups are its expansion to the job
// roles alone.
func expandedOnly(ls []Lookup, roles []string) bool {
	if len(ls) != len(roles) {
		return false
	}
	for i, l := range ls {
		if l.Role != roles[i] {
			return false
		}
	}
	return true
}

// checkLookup checks what every emitted lookup must satisfy.
func checkLookup(t *testing.T, l Lookup) {
	t.Helper()
	ok := l.Row >= 1
	switch l.Kind {
	case domain.InputProfileURL:
		ok = ok && l.ProfileURL != ""
	case domain.InputEmail:
		ok = ok && l.Email != ""
	case domain.InputNameCompany:
		ok = ok && l.Name != "" && l.Company != "" && l.Domain == ""
	case domain.InputNameDomain:
		ok = ok && l.Name != "" && l.Domain != ""
	default:
		ok = false
	}
	if l.ProfileURL != "" {
		c, msg := canonicalProfileURL(l.ProfileURL)
		ok = ok && c == l.ProfileURL && msg == "" && strings.HasPrefix(c, "https://")
	}
	if l.Email != "" {
		c, msg := canonicalEmail(l.Email)
		ok = ok && c == l.Email && msg == ""
	}
	if l.Domain != "" {
		c, msg := canonicalDomain(l.Domain)
		ok = ok && c == l.Domain && msg == ""
	}
	ok = ok && len(l.Ref) <= maxRefBytes
	if !ok {
		t.Fatalf("invalid lookup %+v", l)
	}
}

func checkError(t *testing.T, err error, lim Limits) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	switch e.Code {
	case CodeMalformedCSV, CodeMalformedJSON, CodeMalformedXLSX, CodeTooLarge, CodeInvalidRows, CodeEmptyUpload, CodeInvalidOptions:
	default:
		t.Fatalf("unknown code %q", e.Code)
	}
	if len(e.Details) > lim.MaxErrors || e.Message == "" {
		t.Fatalf("error %v has %d details", e, len(e.Details))
	}
	for _, d := range e.Details {
		if d.Row < 0 || d.Message == "" {
			t.Fatalf("bad detail %+v", d)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`{"rows": []}`,
		`{"name": "Q4 outbound, DACH", "rows": [{"ref": "crm-0001", "company": "Acme GmbH"},
		  {"ref": "crm-0002", "profile_url": "https://platform.example/in/jane-doe"},
		  {"ref": "crm-0003", "name": "John Roe", "company": "Beta AG", "extra": {"owner": "anna"}}],
		  "roles": ["VP Sales", "Head of Marketing"], "lookups": ["profile", "email"], "budget_credits": 5000, "max_age": "30d"}`,
		`{"rows": [{"company": 1, "extra": {"a": 2}}, "x", null, [1, {"a": []}]], "roles": "x", "budget_credits": 1.5}`,
		`{"rows": [{"company": "A", "company": "B", "phone": 1}], "callback": {}, "name": null}`,
		`{"rows": [{"email": "Jane@Example.com"}]} trailing`,
		"\ufeff{\"rows\": [{\"company\": \"\\u0000\\ud800<>&\"}]}",
		"{\"rows\": [{\"company\": \"Ac\xffme\"}]}",
		`{"rows": [{"company": "A"},]}`,
		`[{"company": "A"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeJSON(bytes.NewReader(data), fuzzLimits)
		if err != nil {
			checkError(t, err, fuzzLimits)
			return
		}
		if len(req.Rows) == 0 || len(req.Rows) > fuzzLimits.MaxLookups {
			t.Fatalf("decoded %d rows", len(req.Rows))
		}

		// Round trip through encoding/json.
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeJSON(bytes.NewReader(b), Limits{MaxBytes: 1 << 24, MaxLookups: fuzzLimits.MaxLookups})
		if err != nil {
			t.Fatalf("re-encoded body fails: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(again, req) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", again, req)
		}

		opts, err := req.Options(fuzzLimits)
		if err != nil {
			checkError(t, err, fuzzLimits)
		}
		err = ExpandRows(req.Rows, Options{Roles: opts.Roles}, fuzzLimits, func(l Lookup) error {
			checkLookup(t, l)
			return nil
		})
		if err != nil {
			checkError(t, err, fuzzLimits)
		}
	})
}
