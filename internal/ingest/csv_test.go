package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
)

func TestParseCSV(t *testing.T) {
	t.Parallel()
	roles := []string{"VP Sales", "Head of Marketing"}
	small := DefaultLimits()
	small.MaxColumns, small.MaxCellBytes = 3, 10
	tests := []struct {
		name    string
		in      string
		roles   []string
		enc     string
		lim     Limits
		want    []Lookup
		code    string
		details []at
	}{
		{
			name: "all kinds, extra columns kept with their header case",
			in: "Ref, Profile_URL ,name,company,EMAIL,Notes,Owner\n" +
				"crm-1,https://www.Platform.example/in/Jane-Doe/?utm=x#top,,,,vip,anna\n" +
				"crm-2,,,,John.Roe@Example.COM,,\n" +
				"crm-3,, John Roe ,Beta AG,,\"=HYPERLINK(\"\"x\"\")\",<b>\n",
			want: []Lookup{
				{Row: 1, Ref: "crm-1", Kind: domain.InputProfileURL, ProfileURL: "https://platform.example/in/Jane-Doe", Extra: map[string]string{"Notes": "vip", "Owner": "anna"}},
				{Row: 2, Ref: "crm-2", Kind: domain.InputEmail, Email: "john.roe@example.com", Extra: map[string]string{"Notes": "", "Owner": ""}},
				{Row: 3, Ref: "crm-3", Kind: domain.InputNameCompany, Name: "John Roe", Company: "Beta AG", Extra: map[string]string{"Notes": `=HYPERLINK("x")`, "Owner": "<b>"}},
			},
		},
		{
			name: "priority: profile_url, then email; other fields kept",
			in: "profile_url,email,name,company\n" +
				"http://platform.example:80/in/a//,A@x.example,Ann,Acme\n" +
				",b@x.example,Bob,\n",
			want: []Lookup{
				{Row: 1, Kind: domain.InputProfileURL, ProfileURL: "https://platform.example/in/a", Email: "a@x.example", Name: "Ann", Company: "Acme"},
				{Row: 2, Kind: domain.InputEmail, Email: "b@x.example", Name: "Bob"},
			},
		},
		{
			name: "BOM",
			in:   "\ufeffprofile_url\nhttps://platform.example/in/a\n",
			want: []Lookup{{Row: 1, Kind: domain.InputProfileURL, ProfileURL: "https://platform.example/in/a"}},
		},
		{
			name: "BOM before a quoted header",
			in:   "\ufeff\"company\",\"name\"\r\nAcme,Jane\r\n",
			want: []Lookup{{Row: 1, Kind: domain.InputNameCompany, Company: "Acme", Name: "Jane"}},
		},
		{
			name: "CRLF",
			in:   "company,name\r\nAcme,Jane\r\nBeta,John\r\n",
			want: []Lookup{
				{Row: 1, Kind: domain.InputNameCompany, Company: "Acme", Name: "Jane"},
				{Row: 2, Kind: domain.InputNameCompany, Company: "Beta", Name: "John"},
			},
		},
		{
			name: "mixed endings, blank lines, no final newline",
			in:   "company,name\r\nAcme,Jane\n\nBeta,John\r\n\r\nGamma,Joe",
			want: []Lookup{
				{Row: 1, Kind: domain.InputNameCompany, Company: "Acme", Name: "Jane"},
				{Row: 2, Kind: domain.InputNameCompany, Company: "Beta", Name: "John"},
				{Row: 3, Kind: domain.InputNameCompany, Company: "Gamma", Name: "Joe"},
			},
		},
		{
			name: "empty rows from a spreadsheet are skipped but counted",
			in:   "company,name,notes\n,,\nAcme,Jane,\n , ,\n",
			want: []Lookup{{Row: 2, Kind: domain.InputNameCompany, Company: "Acme", Name: "Jane", Extra: map[string]string{"notes": ""}}},
		},
		{
			name: "quoted commas and newlines",
			in:   "ref,company,name,notes\n\"r,1\",\"Acme, Inc.\",Jane,\"line 1\r\nline 2\tend\"\n",
			want: []Lookup{{Row: 1, Ref: "r,1", Kind: domain.InputNameCompany, Company: "Acme, Inc.", Name: "Jane", Extra: map[string]string{"notes": "line 1\nline 2\tend"}}},
		},
		{
			name:  "company times roles, ref and extra echoed",
			in:    "ref,company,tier\nc1,Acme GmbH,A\nc2,Beta AG,B\n",
			roles: roles,
			want: []Lookup{
				{Row: 1, Ref: "c1", Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Acme GmbH", Role: "VP Sales", Extra: map[string]string{"tier": "A"}},
				{Row: 1, Ref: "c1", Kind: domain.InputNameCompany, Name: "Head of Marketing", Company: "Acme GmbH", Role: "Head of Marketing", Extra: map[string]string{"tier": "A"}},
				{Row: 2, Ref: "c2", Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Beta AG", Role: "VP Sales", Extra: map[string]string{"tier": "B"}},
				{Row: 2, Ref: "c2", Kind: domain.InputNameCompany, Name: "Head of Marketing", Company: "Beta AG", Role: "Head of Marketing", Extra: map[string]string{"tier": "B"}},
			},
		},
		{
			name:  "a name and company is not expanded",
			in:    "company,name\nAcme,Jane\n",
			roles: roles,
			want:  []Lookup{{Row: 1, Kind: domain.InputNameCompany, Name: "Jane", Company: "Acme"}},
		},
		{
			name:    "company rows without roles",
			in:      "company,name\nAcme,\nBeta,John\n",
			code:    CodeInvalidRows,
			details: []at{{1, "company", "needs roles"}},
		},
		{
			name:    "name without company",
			in:      "name,company\nJane,\n",
			code:    CodeInvalidRows,
			details: []at{{1, "company", "needs a company"}},
		},
		{
			name:    "row with none of the fields",
			in:      "ref,company,notes\nr1,,something\n",
			code:    CodeInvalidRows,
			details: []at{{1, "", "none of"}},
		},
		{
			name: "bad URLs",
			in: "profile_url\n" +
				"ftp://platform.example/in/a\n" +
				"platform.example/in/a\n" +
				"https://platform.example/\n" +
				"https://user:pw@platform.example/in/a\n" +
				"https:///in/a\n" +
				"https://www./in/a\n" +
				"https://plat form.example/in/a\n" +
				"https://[::1]/in/a\n",
			code: CodeInvalidRows,
			details: []at{
				{1, "profile_url", "not http or https"},
				{2, "profile_url", "not an absolute URL"},
				{3, "profile_url", "no path"},
				{4, "profile_url", "credentials"},
				{5, "profile_url", "no host"},
				{6, "profile_url", "no host"},
				{7, "profile_url", "not a URL"},
				{8, "profile_url", "not a domain name"},
			},
		},
		{
			name: "bad emails",
			in:   "email\nJane <jane@x.example>\njane@\njane@localhost\nnot an email\n\"\"\"jane doe\"\"@x.example\"\njane@[10.0.0.1]\n",
			code: CodeInvalidRows,
			details: []at{
				{1, "email", "bare address"},
				{2, "email", "not an email"},
				{3, "email", "not an internet domain"},
				{4, "email", "not an email"},
				{5, "email", "not an email"},
				{6, "email", "not an internet domain"},
			},
		},
		{
			name:    "errors stop emitting but reading goes on",
			in:      "company,name,email\nAcme,Jane,\nBeta,,\nGamma,Joe,bad\n",
			code:    CodeInvalidRows,
			details: []at{{2, "company", "needs roles"}, {3, "email", "not an email"}},
		},
		{
			name:    "ref too long",
			in:      "ref,company,name\n" + strings.Repeat("r", 201) + ",Acme,Jane\n",
			code:    CodeInvalidRows,
			details: []at{{1, "ref", "limit is 200"}},
		},
		{
			name:    "broken quoting: bare quote",
			in:      "company,name\nAcme,Jane\nBeta,Jo\"hn\n",
			code:    CodeMalformedCSV,
			details: []at{{2, "", "line 3, column 8"}},
		},
		{
			name:    "broken quoting: unterminated quote",
			in:      "company,name\nAcme,\"Jane\nBeta,John\n",
			code:    CodeMalformedCSV,
			details: []at{{1, "", "line 3, column 11: extraneous or missing"}},
		},
		{
			name:    "broken quoting in the header",
			in:      "company,\"name\"x\nAcme,Jane\n",
			code:    CodeMalformedCSV,
			details: []at{{0, "", "line 1"}},
		},
		{
			name:    "ragged rows",
			in:      "company,name\nAcme\nBeta,John,x\nGamma,Joe\n",
			code:    CodeInvalidRows,
			details: []at{{1, "", "1 fields; the header has 2"}, {2, "", "3 fields"}},
		},
		{
			name:    "non-UTF-8 cell, the file said to be UTF-8",
			in:      "company,name,notes\nAc\xffme,Jane,\nAcme,Jane,\xe9t\xe9\n",
			enc:     EncodingUTF8,
			code:    CodeInvalidRows,
			details: []at{{1, "company", "UTF-8"}, {2, "notes", "UTF-8"}},
		},
		{
			name: "bytes that are not UTF-8 after ASCII are Windows-1252",
			in:   "company,name,notes\nAc\xffme,Jane,\nAcme,Jane,\xe9t\xe9 \x80\n",
			want: []Lookup{{Row: 1, Kind: domain.InputNameCompany, Company: "Acÿme", Name: "Jane", Extra: map[string]string{"notes": ""}},
				{Row: 2, Kind: domain.InputNameCompany, Company: "Acme", Name: "Jane", Extra: map[string]string{"notes": "été €"}}},
		},
		{
			name:    "bytes that are not UTF-8 after UTF-8 are named",
			in:      "company,name,notes\nAcmé,Jane,\nAcme,Jane,\xe9t\xe9\n",
			code:    CodeInvalidRows,
			details: []at{{2, "notes", "encoding=windows-1252"}},
		},
		{
			name:    "control characters; tab is allowed, newline only in extra columns",
			in:      "company,name,notes\n\"Ac\x01me\",\"Ja\tne\",\"a\nb\"\nAcme,\"Ja\nne\",\nAcme,Jane,\"\x00\"\n",
			code:    CodeInvalidRows,
			details: []at{{1, "company", "U+0001"}, {2, "name", "U+000A"}, {3, "notes", "U+0000"}},
		},
		{
			name: "unnamed columns: ignored when empty, an error when not",
			in:   "company,name,,\nAcme,Jane,,\nBeta,John,,x\n",
			code: CodeInvalidRows, details: []at{{2, "column 4", "without a header name"}},
		},
		{
			name:    "huge cell",
			in:      "company,name\nAcme,Jane\nAcme," + strings.Repeat("x", 11) + "\n",
			lim:     small,
			code:    CodeInvalidRows,
			details: []at{{2, "name", "11 bytes; the limit is 10"}},
		},
		{
			name:    "empty file",
			in:      "",
			code:    CodeEmptyUpload,
			details: []at{},
		},
		{
			name: "only a BOM and blank lines",
			in:   "\ufeff\n\r\n\n",
			code: CodeEmptyUpload,
		},
		{
			name: "header only",
			in:   "ref,company,name\r\n",
			code: CodeEmptyUpload,
		},
		{
			name: "header and empty rows only",
			in:   "ref,company,name\n,,\n",
			code: CodeEmptyUpload,
		},
		{
			name:    "duplicate header names",
			in:      "company,name,Company \nAcme,Jane,Acme\n",
			code:    CodeInvalidRows,
			details: []at{{0, "Company", "appears twice (columns 1 and 3)"}},
		},
		{
			name:    "duplicate extra header names",
			in:      "company,name,notes,NOTES\nAcme,Jane,a,b\n",
			code:    CodeInvalidRows,
			details: []at{{0, "NOTES", "appears twice"}},
		},
		{
			name:    "no known column",
			in:      "ref,notes\nr1,x\n",
			code:    CodeInvalidRows,
			details: []at{{0, "", "found: ref, notes"}},
		},
		{
			name:    "a headerless file",
			in:      "https://platform.example/in/a\n",
			code:    CodeInvalidRows,
			details: []at{{0, "", "must be a header"}},
		},
		{
			name:    "too many columns",
			in:      "company,name,a,b\nAcme,Jane,1,2\n",
			lim:     small,
			code:    CodeInvalidRows,
			details: []at{{0, "", "4 columns; the limit is 3"}},
		},
		{
			name:    "bad header name",
			in:      "company,name,\"no\x01te\"\nAcme,Jane,1\n",
			code:    CodeInvalidRows,
			details: []at{{0, "column 3", "control character"}},
		},
		{
			name:    "more lookups than MaxLookups",
			in:      "company,name\nA,a\nB,b\nC,c\n",
			lim:     Limits{MaxLookups: 2},
			code:    CodeTooLarge,
			details: []at{},
		},
		{
			name:  "more lookups than MaxLookups after role expansion",
			in:    "company\nAcme\n",
			roles: []string{"a", "b", "c"},
			lim:   Limits{MaxLookups: 2},
			code:  CodeTooLarge,
		},
		{
			name: "exactly MaxLookups",
			in:   "company\nAcme\n",
			lim:  Limits{MaxLookups: 2}, roles: []string{"a", "b"},
			want: []Lookup{
				{Row: 1, Kind: domain.InputNameCompany, Name: "a", Role: "a", Company: "Acme"},
				{Row: 1, Kind: domain.InputNameCompany, Name: "b", Role: "b", Company: "Acme"},
			},
		},
		{
			name: "larger than MaxBytes",
			in:   "company,name\n" + strings.Repeat("Acme,Jane\n", 10),
			lim:  Limits{MaxBytes: 50},
			code: CodeTooLarge,
		},
		{
			name: "exactly MaxBytes",
			in:   "company,name\nAcme,Jane\n",
			lim:  Limits{MaxBytes: 23},
			want: []Lookup{{Row: 1, Kind: domain.InputNameCompany, Name: "Jane", Company: "Acme"}},
		},
		{
			name:    "MaxErrors",
			in:      "company,name\n" + strings.Repeat(",Jane\n", 5),
			lim:     Limits{MaxErrors: 2},
			code:    CodeInvalidRows,
			details: []at{{1, "company", ""}, {2, "company", ""}},
		},
		{
			name:    "formulas, SQL and HTML are data",
			in:      "company,name\n\"=cmd|' /C calc'!A0\",'; DROP TABLE rows; --\n<script>x</script>,@SUM(1)\n",
			want:    []Lookup{{Row: 1, Kind: domain.InputNameCompany, Company: "=cmd|' /C calc'!A0", Name: "'; DROP TABLE rows; --"}, {Row: 2, Kind: domain.InputNameCompany, Company: "<script>x</script>", Name: "@SUM(1)"}},
			details: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []Lookup
			err := csvErr(strings.NewReader(tt.in), Options{Roles: tt.roles, Encoding: tt.enc}, tt.lim, collect(&got))
			checkResult(t, err, got, tt.want, tt.code, tt.details)
			if tt.code != "" && len(got) > 0 && tt.code == CodeInvalidRows {
				// Emitting stops at the first error; rows before it may have been emitted.
				first := err.(*Error).Details[0].Row
				for _, l := range got {
					if l.Row >= first {
						t.Errorf("emitted row %d at or after the first error (row %d)", l.Row, first)
					}
				}
			}
		})
	}
}

// A single enormous line must fail after about one record's budget.
func TestParseCSVBoundedRecord(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits()
	tests := []struct {
		name   string
		prefix string
		row    int
		max    int64 // bytes the parser may consume from the upload
	}{
		{"a 10 MB header line", "", 0, int64(lim.MaxColumns*lim.MaxCellBytes) * 11 / 10},
		{"a 10 MB data line", "company,notes\n", 1, 64 << 10},
		{"a 10 MB quoted cell", "company,notes\nAcme,\"", 1, 64 << 10},
		{"a 10 MB line of doubled quotes", "company,notes\nAcme,\"", 1, 64 << 10},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := byte('a')
			if i == 3 {
				b = '"'
			}
			src := &countingReader{r: io.MultiReader(strings.NewReader(tt.prefix), &repeatReader{b: b, n: 10 << 20})}
			err := csvErr(src, Options{}, lim, func(Lookup) error { return nil })
			checkResult(t, err, nil, nil, CodeInvalidRows, []at{{tt.row, "", "longer than"}})
			if src.n > tt.max {
				t.Errorf("consumed %d bytes of the upload, want at most %d", src.n, tt.max)
			}
		})
	}
}

// The largest valid record passes the record budget although its raw bytes
// exceed it: every cell at MaxCellBytes, quoted, with doubled quotes (and
// CRLF inside the free-text ones).
func TestParseCSVLargestRecord(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxColumns: 4, MaxCellBytes: 64}
	quotes := `"` + strings.Repeat(`""`, 64) + `"`                             // 64 quotes once parsed
	text := `"` + strings.Repeat(`""`, 30) + strings.Repeat("\r\n", 33) + `x"` // 64 bytes once parsed
	record := quotes + "," + quotes + "," + text + "," + text + "\r\n"
	if budget := int64(4*(64+3) + recordSlack); int64(len(record)) <= budget {
		t.Fatalf("record of %d bytes fits the budget of %d raw; the test is too weak", len(record), budget)
	}
	in := "company,name,a,b\r\n" + strings.Repeat(record, 3)
	var got []Lookup
	if err := csvErr(strings.NewReader(in), Options{}, lim, collect(&got)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0].Company) != 64 || len(got[0].Extra["a"]) != 64 {
		t.Fatalf("got %d lookups: %+v", len(got), got)
	}
	// One more byte in a cell is a cell error, not a record error.
	in = "company,name,a,b\r\n" + strings.Replace(record, "x", "xy", 1)
	err := csvErr(strings.NewReader(in), Options{}, lim, nil)
	checkResult(t, err, nil, nil, CodeInvalidRows, []at{{1, "a", "65 bytes"}})
}

// Reading stops at once when MaxLookups is passed.
func TestParseCSVStopsAtMaxLookups(t *testing.T) {
	t.Parallel()
	src := &countingReader{r: strings.NewReader("company,name\n" + strings.Repeat("Acme,Jane\n", 100_000))}
	n := 0
	err := csvErr(src, Options{}, Limits{MaxLookups: 10}, func(Lookup) error { n++; return nil })
	checkResult(t, err, nil, nil, CodeTooLarge, nil)
	if !strings.Contains(err.Error(), "more than 10 lookups") {
		t.Errorf("message %q does not name the limit", err)
	}
	if n != 10 || src.n > 16<<10 {
		t.Errorf("emitted %d lookups and read %d bytes; want 10 and little", n, src.n)
	}
}

func TestParseCSVEmitError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	calls := 0
	err := csvErr(strings.NewReader("company,name\nA,a\nB,b\n"), Options{}, Limits{}, func(Lookup) error {
		calls++
		return boom
	})
	if err != boom || calls != 1 {
		t.Fatalf("err = %v after %d calls; want boom after 1", err, calls)
	}
}

func TestParseCSVReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("company,name\nA,a\n"), iotestErrReader{boom})
	err := csvErr(r, Options{}, Limits{}, nil)
	var e *Error
	if !errors.Is(err, boom) || errors.As(err, &e) {
		t.Fatalf("err = %v, want the read error wrapped, not an *Error", err)
	}
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

func TestParseCSVMaxErrorsMessage(t *testing.T) {
	t.Parallel()
	err := csvErr(strings.NewReader("company\n"+strings.Repeat("Acme\n", 10)), Options{}, Limits{MaxErrors: 3}, nil)
	var e *Error
	if !errors.As(err, &e) || len(e.Details) != 3 || !strings.Contains(e.Message, "more than 3 errors; stopped reading at row 4") {
		t.Fatalf("err = %v", err)
	}
	if e.HTTPStatus() != 422 {
		t.Errorf("status %d", e.HTTPStatus())
	}
}

func TestErrorStatus(t *testing.T) {
	t.Parallel()
	for code, status := range map[string]int{
		CodeMalformedCSV: 400, CodeMalformedJSON: 400, CodeTooLarge: 413,
		CodeInvalidRows: 422, CodeEmptyUpload: 422, CodeInvalidOptions: 422,
	} {
		if got := (&Error{Code: code}).HTTPStatus(); got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
	}
	e := &Error{Code: CodeInvalidRows, Message: "row 2 is invalid", Details: []FieldError{{Row: 2, Column: "email", Message: "bad"}}}
	if got, want := e.Error(), `ingest: invalid_rows: row 2 is invalid (first: row 2, column "email": bad)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestCanonicalProfileURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://platform.example/in/jane-doe":            "https://platform.example/in/jane-doe",
		"HTTP://WWW.Platform.Example/in/Jane-Doe/":        "https://platform.example/in/Jane-Doe",
		"http://www.www.platform.example/in/a?x=1#y":      "https://platform.example/in/a",
		"https://platform.example:443/in/a":               "https://platform.example/in/a",
		"http://platform.example:8080/in/a":               "https://platform.example:8080/in/a",
		"https://platform.example/in/j%C3%B6rg%20m///":    "https://platform.example/in/j%C3%B6rg%20m",
		"https://platform.example/in/jörg":                "https://platform.example/in/j%C3%B6rg",
		"https://platform.example/in/a%2Fb":               "https://platform.example/in/a%2Fb",
		"https://münchen.example/in/a":                    "https://münchen.example/in/a",
		"https://platform.example/in/a/?trk=public_post/": "https://platform.example/in/a",
	} {
		got, msg := canonicalProfileURL(in)
		if got != want || msg != "" {
			t.Errorf("canonicalProfileURL(%q) = %q, %q; want %q", in, got, msg, want)
		}
		if again, _ := canonicalProfileURL(got); again != got {
			t.Errorf("canonical form %q is not stable: %q", got, again)
		}
	}
}

func ExampleParseCSV() {
	in := "ref,company,name,profile_url\n" +
		"c1,Acme GmbH,,\n" +
		"c2,,,https://www.platform.example/in/jane-doe/\n"
	_, err := ParseCSV(strings.NewReader(in), Options{Roles: []string{"VP Sales", "CTO"}}, DefaultLimits(), func(l Lookup) error {
		fmt.Printf("row %d %s: %q %q %q\n", l.Row, l.Kind, l.ProfileURL, l.Name, l.Company)
		return nil
	})
	fmt.Println(err)
	// Output:
	// row 1 name_company: "" "VP Sales" "Acme GmbH"
	// row 1 name_company: "" "CTO" "Acme GmbH"
	// row 2 profile_url: "https://platform.example/in/jane-doe" "" ""
	// <nil>
}
