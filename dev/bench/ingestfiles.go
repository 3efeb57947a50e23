package main

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/text/encoding/charmap"
)

// The ingest scenario's other formats: the same n companies as companiesCSV,
// as a CRM exports them (Record ID, Company Name, Website, Owner), with
// German names so the encodings have work to do.

// crmCompany is row i's company name and website.
func crmCompany(i int) (name, site string) {
	prefixes := []string{"Müller", "Größe", "Bäcker", "Acme", "Globex", "Café Crème", "Søren", "Initech"}
	suffixes := []string{"GmbH", "AG", "Inc", "SARL", "€ Fonds"}
	p := prefixes[i%len(prefixes)]
	host := strings.NewReplacer(" ", "-", "é", "e", "è", "e").Replace(strings.ToLower(p))
	return fmt.Sprintf("%s %s %d", p, suffixes[i%len(suffixes)], i+1), fmt.Sprintf("https://www.%s-%d.de/", host, i+1)
}

// windows1252CSV writes the companies as Excel saves a CSV in a German
// locale: Windows-1252, semicolons, CRLF.
func windows1252CSV(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(charmap.Windows1252.NewEncoder().Writer(w), 1<<20)
	fmt.Fprint(bw, "Record ID;Company Name;Website;Owner\r\n")
	for i := range n {
		name, site := crmCompany(i)
		fmt.Fprintf(bw, "%d;%s;%s;owner-%d\r\n", i+1, name, site, i%7)
	}
	return bw.Flush()
}

// writeXLSX writes the companies as an .xlsx the way Excel does: text in the
// shared string table (two unique strings a row and seven owners), numbers
// in the cells.
func writeXLSX(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fw := bufio.NewWriterSize(f, 1<<20)
	zw := zip.NewWriter(fw)
	part := func(name, body string) error {
		w, err := zw.Create(name)
		if err == nil {
			_, err = io.WriteString(w, body)
		}
		return err
	}
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook ` + ns +
			` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Accounts" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
	}
	for _, p := range parts {
		if err := part(p[0], p[1]); err != nil {
			return err
		}
	}
	// String indices: the four headers, then per row its name and site, then the owners.
	const headers = 4
	owner := func(k int) int { return headers + 2*n + k }
	w, err := zw.Create("xl/worksheets/sheet1.xml")
	if err != nil {
		return err
	}
	sw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(sw, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet %s><sheetData>`, ns)
	fmt.Fprint(sw, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c><c r="D1" t="s"><v>3</v></c></row>`)
	for i := range n {
		r := i + 2
		fmt.Fprintf(sw, `<row r="%d"><c r="A%d"><v>%d</v></c><c r="B%d" t="s"><v>%d</v></c><c r="C%d" t="s"><v>%d</v></c><c r="D%d" t="s"><v>%d</v></c></row>`,
			r, r, i+1, r, headers+2*i, r, headers+2*i+1, r, owner(i%7))
	}
	fmt.Fprint(sw, `</sheetData></worksheet>`)
	if err := sw.Flush(); err != nil {
		return err
	}
	w, err = zw.Create("xl/sharedStrings.xml")
	if err != nil {
		return err
	}
	sw = bufio.NewWriterSize(w, 1<<20)
	total := headers + 2*n + 7
	fmt.Fprintf(sw, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst %s count="%d" uniqueCount="%d">`, ns, headers+3*n, total)
	for _, h := range []string{"Record ID", "Company Name", "Website", "Owner"} {
		fmt.Fprintf(sw, "<si><t>%s</t></si>", h)
	}
	for i := range n {
		name, site := crmCompany(i)
		fmt.Fprintf(sw, "<si><t>%s</t></si><si><t>%s</t></si>", strings.ReplaceAll(name, "&", "&amp;"), site)
	}
	for k := range 7 {
		fmt.Fprintf(sw, "<si><t>owner-%d</t></si>", k)
	}
	fmt.Fprint(sw, `</sst>`)
	if err := sw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := fw.Flush(); err != nil {
		return err
	}
	return f.Close()
}
