package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/xuri/excelize/v2"
	"golang.org/x/text/encoding/charmap"

	"github.com/enrichq/enrichq/internal/domain"
)

// crmCSV is a CRM-style export: its headers are matched, not named as fields.
const crmCSV = "Record ID,Company Name,Website,Job Title,Email Address,Industry\n" +
	"1,Müller & Söhne GmbH,https://www.müller-söhne.de/,Geschäftsführer,,Maschinenbau\n" +
	"2,Acme Corp,acme.com,,jane@acme.com,Software\n" +
	"3,Café Crème SARL,,Directeur €,,Food\n"

// crmWant is what crmCSV gives with the role "CTO".
var crmWant = []Lookup{
	{Row: 1, Ref: "1", Kind: domain.InputNameDomain, Name: "Geschäftsführer", Company: "Müller & Söhne GmbH", Domain: "xn--mller-shne-kcb9d.de",
		Role: "Geschäftsführer", Extra: map[string]string{"Industry": "Maschinenbau"}},
	{Row: 1, Ref: "1", Kind: domain.InputNameDomain, Name: "CTO", Company: "Müller & Söhne GmbH", Domain: "xn--mller-shne-kcb9d.de",
		Role: "CTO", Extra: map[string]string{"Industry": "Maschinenbau"}},
	{Row: 2, Ref: "2", Kind: domain.InputEmail, Company: "Acme Corp", Domain: "acme.com", Email: "jane@acme.com", Extra: map[string]string{"Industry": "Software"}},
	{Row: 3, Ref: "3", Kind: domain.InputNameCompany, Name: "Directeur €", Company: "Café Crème SARL", Role: "Directeur €", Extra: map[string]string{"Industry": "Food"}},
	{Row: 3, Ref: "3", Kind: domain.InputNameCompany, Name: "CTO", Company: "Café Crème SARL", Role: "CTO", Extra: map[string]string{"Industry": "Food"}},
}

var crmColumns = map[string]string{"Record ID": "ref", "Company Name": "company", "Website": "domain", "Job Title": "role", "Email Address": "email"}

func utf16Bytes(s string, bigEndian bool) []byte {
	var b bytes.Buffer
	if bigEndian {
		b.Write([]byte{0xFE, 0xFF})
	} else {
		b.Write([]byte{0xFF, 0xFE})
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b.Write([]byte{byte(u >> 8), byte(u)})
		} else {
			b.Write([]byte{byte(u), byte(u >> 8)})
		}
	}
	return b.Bytes()
}

func windows1252(t testing.TB, s string) []byte {
	t.Helper()
	b, err := charmap.Windows1252.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each encoding and delimiter of a saved CSV reads the same lookups.
func TestParseCSVEncodingsAndDelimiters(t *testing.T) {
	t.Parallel()
	semi := strings.ReplaceAll(strings.ReplaceAll(crmCSV, ",", ";"), "Müller & Söhne GmbH", "\"Müller; Söhne GmbH\"")
	tests := []struct {
		name string
		data []byte
		enc  string
		semi bool
	}{
		{"UTF-8", []byte(crmCSV), "", false},
		{"UTF-8 with BOM", append([]byte("\xEF\xBB\xBF"), crmCSV...), "", false},
		{"UTF-16LE with BOM", utf16Bytes(crmCSV, false), "", false},
		{"UTF-16BE with BOM", utf16Bytes(crmCSV, true), "", false},
		{"UTF-16LE named", utf16Bytes(crmCSV, false)[2:], EncodingUTF16LE, false},
		{"Windows-1252, sniffed", windows1252(t, crmCSV), "", false},
		{"Windows-1252, named", windows1252(t, crmCSV), EncodingWindows1252, false},
		{"semicolons, quoted cell with a semicolon", []byte(semi), "", true},
		{"semicolons in Windows-1252 with Excel's sep= line", append([]byte("sep=;\r\n"), windows1252(t, strings.ReplaceAll(semi, "\n", "\r\n"))...), "", true},
		{"tabs", []byte(strings.ReplaceAll(crmCSV, ",", "\t")), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []Lookup
			sum, err := ParseCSV(bytes.NewReader(tt.data), Options{Roles: []string{"CTO"}, Encoding: tt.enc}, DefaultLimits(), collect(&got))
			want := crmWant
			if tt.semi {
				want = cloneLookups(crmWant)
				want[0].Company, want[1].Company = "Müller; Söhne GmbH", "Müller; Söhne GmbH"
			}
			checkResult(t, err, got, want, "", nil)
			if fmt.Sprint(sum.Columns) != fmt.Sprint(crmColumns) || fmt.Sprint(sum.Extra) != "[Industry]" || sum.Rows != 3 || sum.Lookups != 5 {
				t.Fatalf("summary = %+v", sum)
			}
		})
	}
}

func cloneLookups(ls []Lookup) []Lookup { return append([]Lookup(nil), ls...) }

// The header matching: which header goes to which field, what is ambiguous,
// and the mapping over it.
func TestHeaderMatching(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header  string
		mapping map[string]string
		want    string // field per column, "-" for an extra
		err     string // part of the error when set
	}{
		{"ref,profile_url,name,company,email", nil, "ref profile_url name company email", ""},
		{"Company Name,Website,LinkedIn URL,Email Address", nil, "company domain profile_url email", ""},
		{"account name,COMPANY_DOMAIN,Linkedin Profile Url,e-mail", nil, "company domain profile_url email", ""},
		{"Organisation,Domain Name,Job Title", nil, "company domain role", ""},
		{"Organization,Web Site,Title", nil, "company domain role", ""},
		{"First Name,Last Name,Account Name", nil, "first_name last_name company", ""},
		{"Full Name,Employer,Position", nil, "name company role", ""},
		{"Contact ID,Person LinkedIn URL,Work Email", nil, "ref profile_url email", ""},
		{"Record ID,Name,Company Domain Name,Homepage", nil, "", `"Company Domain Name" and "Homepage" both look like the domain`},
		// An exact field name wins over an alias: the alias stays an extra.
		{"company,Account Name,Website", nil, "company - domain", ""},
		{"email,Email Address", nil, "email -", ""},
		{"Company Name,Account Name", nil, "", `columns "Company Name" and "Account Name" both look like the company; say which one is with columns=company:Company Name (the other is kept`},
		{"Company Name,Account Name", map[string]string{"company": "account name"}, "- company", ""},
		{"Company Name,Account Name", map[string]string{"company": "Account Name", "domain": "Web"}, "", `columns maps domain to "Web", which is not a column of the file`},
		{"Org,Site,Who", map[string]string{"company": "Org", "domain": "Site", "name": "who"}, "company domain name", ""},
		{"Notes,Owner", nil, "", "the first row must be a header naming at least one of"},
		{"Name,Website", map[string]string{"company": "Name"}, "company domain", ""},
	}
	for _, tt := range tests {
		h, err := parseHeader(strings.Split(tt.header, ","), tt.mapping, DefaultLimits())
		if tt.err != "" {
			if err == nil || !strings.Contains(fmt.Sprint(err.Details), tt.err) || err.HTTPStatus() != 422 {
				t.Errorf("%q %v: error %v, want one with %q", tt.header, tt.mapping, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q %v: %v", tt.header, tt.mapping, err)
			continue
		}
		var got []string
		for _, f := range h.fields {
			if f == "" {
				f = "-"
			}
			got = append(got, f)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%q %v: fields %q, want %q", tt.header, tt.mapping, strings.Join(got, " "), tt.want)
		}
	}
	// Every alias maps to its own field and no two fields share one.
	for f, as := range HeaderAliases {
		for _, a := range as {
			if aliasField[normHeader(a)] != f {
				t.Errorf("alias %q is %s's, and also %s's", a, f, aliasField[normHeader(a)])
			}
		}
	}
}

// The rule of roles: a row's own title is one lookup, job roles add the
// others; a name beats the title; a title needs a company or domain.
func TestRoleColumn(t *testing.T) {
	t.Parallel()
	in := "ref,company,domain,name,role\n" +
		"a,Acme,,,CTO\n" + // the title, then the job roles but CTO
		"b,,acme.com,,\n" + // no title: every job role
		"c,Acme,,Jane Doe,CTO\n" + // a person: the title is echoed
		"d,,,,CTO\n" // a title alone
	var got []Lookup
	_, err := ParseCSV(strings.NewReader(in), Options{Roles: []string{"cto", "VP Sales"}}, DefaultLimits(), collect(&got))
	checkResult(t, err, got, nil, CodeInvalidRows, []at{{4, "company", "a name or role needs a company or domain"}})

	in = strings.TrimSuffix(in, "d,,,,CTO\n")
	got = nil
	_, err = ParseCSV(strings.NewReader(in), Options{Roles: []string{"cto", "VP Sales"}}, DefaultLimits(), collect(&got))
	checkResult(t, err, got, []Lookup{
		{Row: 1, Ref: "a", Kind: domain.InputNameCompany, Name: "CTO", Company: "Acme", Role: "CTO"},
		{Row: 1, Ref: "a", Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Acme", Role: "VP Sales"},
		{Row: 2, Ref: "b", Kind: domain.InputNameDomain, Name: "cto", Domain: "acme.com", Role: "cto"},
		{Row: 2, Ref: "b", Kind: domain.InputNameDomain, Name: "VP Sales", Domain: "acme.com", Role: "VP Sales"},
		{Row: 3, Ref: "c", Kind: domain.InputNameCompany, Name: "Jane Doe", Company: "Acme", Role: "CTO"},
	}, "", nil)

	// Without job roles a titled row is one lookup; first and last name make a name.
	got = nil
	_, err = ParseCSV(strings.NewReader("First Name,Last Name,Title,Website\nJane,Doe,CTO,HTTPS://WWW.ACME.COM\n,,CTO,acme.com\n"), Options{}, DefaultLimits(), collect(&got))
	checkResult(t, err, got, []Lookup{
		{Row: 1, Kind: domain.InputNameDomain, Name: "Jane Doe", Domain: "acme.com", Role: "CTO"},
		{Row: 2, Kind: domain.InputNameDomain, Name: "CTO", Domain: "acme.com", Role: "CTO"},
	}, "", nil)
}

// A bad domain is a row error naming the file's header.
func TestDomainRowErrors(t *testing.T) {
	t.Parallel()
	in := "Company,Website\nAcme,10.0.0.1\nBeta,intranet\nGamma,https://gamma.io/x\n"
	var got []Lookup
	_, err := ParseCSV(strings.NewReader(in), Options{Roles: []string{"CTO"}}, DefaultLimits(), collect(&got))
	checkResult(t, err, got, nil, CodeInvalidRows, []at{{1, "Website", "IP address"}, {2, "Website", "no dot"}})
}

// writeXLSX builds a workbook with excelize: sheets in order, each a list of rows.
func writeXLSX(t testing.TB, sheets map[string][][]any, order ...string) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, name := range order {
		if i == 0 {
			if err := f.SetSheetName("Sheet1", name); err != nil {
				t.Fatal(err)
			}
		} else if _, err := f.NewSheet(name); err != nil {
			t.Fatal(err)
		}
		for r, row := range sheets[name] {
			cell, _ := excelize.CoordinatesToCellName(1, r+1)
			if err := f.SetSheetRow(name, cell, &row); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "list.xlsx")
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseXLSX(t *testing.T) {
	t.Parallel()
	crm := [][]any{
		{"Record ID", "Company Name", "Website", "Job Title", "Email Address", "Industry"},
		{1, "Müller & Söhne GmbH", "https://www.müller-söhne.de/", "Geschäftsführer", nil, "Maschinenbau"},
		{2, "Acme Corp", "acme.com", nil, "jane@acme.com", "Software"},
		{},
		{3, "Café Crème SARL", nil, "Directeur €", nil, "Food"},
	}
	path := writeXLSX(t, map[string][][]any{"Notes": {{"not", "a list"}}, "Accounts": crm}, "Notes", "Accounts")
	tmp := t.TempDir()
	var got []Lookup
	sum, err := ParseXLSX(context.Background(), path, tmp, Options{Roles: []string{"CTO"}, Sheet: "accounts"}, DefaultLimits(), collect(&got))
	want := cloneLookups(crmWant)
	want[3].Row, want[4].Row = 4, 4 // the blank sheet row 5 is skipped, its number kept
	checkResult(t, err, got, want, "", nil)
	if fmt.Sprint(sum.Columns) != fmt.Sprint(crmColumns) || sum.Rows != 3 || sum.Lookups != 5 {
		t.Fatalf("summary = %+v", sum)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	// The first sheet by default; a sheet that is not there is named.
	_, err = ParseXLSX(context.Background(), path, tmp, Options{}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeInvalidRows, []at{{0, "", "the first row must be a header"}})
	_, err = ParseXLSX(context.Background(), path, tmp, Options{Sheet: "Leads"}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeInvalidOptions, []at{{0, "sheet", `no sheet "Leads" (its sheets: Notes, Accounts)`}})

	// Errors name the row and the header; a cell over the limit too.
	bad := writeXLSX(t, map[string][][]any{"S": {
		{"Company", "Website", "Notes"},
		{"Acme", "localhost", "x"},
		{"Beta", "beta.com", strings.Repeat("n", 5000)},
		{"Gamma", "gamma.com", "y", "stray"},
	}}, "S")
	_, err = ParseXLSX(context.Background(), bad, tmp, Options{Roles: []string{"CTO"}}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeInvalidRows, []at{{1, "Website", "no dot"}, {2, "Notes", "5000 bytes"}, {3, "", "the row has 4 fields"}})

	// More lookups than the limit.
	_, err = ParseXLSX(context.Background(), path, tmp, Options{Sheet: "Accounts", Roles: []string{"CTO"}}, Limits{MaxLookups: 2}, nil)
	checkResult(t, err, nil, nil, CodeTooLarge, nil)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestParseXLSXHostile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	notZip := filepath.Join(tmp, "x.xlsx")
	if err := os.WriteFile(notZip, []byte("Company\nAcme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ParseXLSX(context.Background(), notZip, tmp, Options{}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeMalformedXLSX, nil)

	// A cell far over the limit is refused before excelize decodes it.
	huge := writeXLSX(t, map[string][][]any{"S": {{"Company", "Notes"}, {"Acme", strings.Repeat("n", 40000)}}}, "S")
	_, err = ParseXLSX(context.Background(), huge, tmp, Options{}, DefaultLimits(), nil)
	checkResult(t, err, nil, nil, CodeInvalidRows, []at{{0, "", "without a tag"}})

	// Too many shared strings for the limits.
	var rows [][]any
	rows = append(rows, []any{"Company", "Name"})
	for i := range 40 {
		rows = append(rows, []any{fmt.Sprint("Co ", i), fmt.Sprint("N ", i)})
	}
	many := writeXLSX(t, map[string][][]any{"S": rows}, "S")
	_, err = ParseXLSX(context.Background(), many, tmp, Options{}, Limits{MaxLookups: 1, MaxBytes: 1 << 20}, nil)
	if err == nil {
		t.Fatal("a workbook of 82 shared strings passed a limit of 1028")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 1 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// docs/uploads.md's table of accepted headers lists every alias, on its
// field's line.
func TestUploadsDocListsHeaders(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/uploads.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		for _, f := range Fields {
			if strings.HasPrefix(l, "| `"+f+"` |") {
				lines[f] = l
			}
		}
	}
	for f, as := range HeaderAliases {
		for _, a := range as {
			if !strings.Contains(lines[f], " "+a+",") && !strings.Contains(lines[f], " "+a+" |") {
				t.Errorf("docs/uploads.md: the line of %s lacks %q", f, a)
			}
		}
	}
}
