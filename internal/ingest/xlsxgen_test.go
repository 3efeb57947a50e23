package ingest

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"os"
	"testing"
)

// writeRawXLSX writes a workbook of one sheet "S" by hand: sst writes the
// shared strings' <si> items (none: no shared strings part), sheet the
// rows of <sheetData>. Large workbooks are written as streams.
func writeRawXLSX(t testing.TB, path string, sst, sheet func(w io.Writer)) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	part := func(name string, body func(w io.Writer)) {
		pw, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriterSize(pw, 64<<10)
		body(bw)
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	text := func(s string) func(w io.Writer) { return func(w io.Writer) { io.WriteString(w, s) } }
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	const rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	part("[Content_Types].xml", text(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`))
	part("_rels/.rels", text(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="`+rel+`/officeDocument" Target="xl/workbook.xml"/></Relationships>`))
	part("xl/workbook.xml", text(`<?xml version="1.0" encoding="UTF-8"?><workbook `+ns+` xmlns:r="`+rel+`"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`))
	rels := `<Relationship Id="rId1" Type="` + rel + `/worksheet" Target="worksheets/sheet1.xml"/>`
	if sst != nil {
		rels += `<Relationship Id="rId2" Type="` + rel + `/sharedStrings" Target="sharedStrings.xml"/>`
	}
	part("xl/_rels/workbook.xml.rels", text(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+rels+`</Relationships>`))
	if sst != nil {
		part("xl/sharedStrings.xml", func(w io.Writer) {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><sst `+ns+`>`)
			sst(w)
			io.WriteString(w, `</sst>`)
		})
	}
	part("xl/worksheets/sheet1.xml", func(w io.Writer) {
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><worksheet `+ns+`><sheetData>`)
		sheet(w)
		io.WriteString(w, `</sheetData></worksheet>`)
	})
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeStringsWorkbook writes the workbook: a header (Name,
// Company) and rows data rows, each a distinct name and a distinct company
// from the shared strings (2 strings a row, 8 and 9 bytes).
func writeStringsWorkbook(t testing.TB, path string, rows int) {
	writeRawXLSX(t, path, func(w io.Writer) {
		io.WriteString(w, `<si><t>Name</t></si><si><t>Company</t></si>`)
		for i := range rows {
			fmt.Fprintf(w, `<si><t>n%07d</t></si><si><t>co%07d</t></si>`, i, i)
		}
	}, func(w io.Writer) {
		io.WriteString(w, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>`)
		for i := range rows {
			r := i + 2
			fmt.Fprintf(w, `<row r="%d"><c r="A%d" t="s"><v>%d</v></c><c r="B%d" t="s"><v>%d</v></c></row>`, r, r, 2*i+2, r, 2*i+3)
		}
	})
}

// checkStringsLookup checks a lookup of writeStringsWorkbook's.
func checkStringsLookup(l Lookup) error {
	i := l.Row - 1
	if l.Name != fmt.Sprintf("n%07d", i) || l.Company != fmt.Sprintf("co%07d", i) {
		return fmt.Errorf("row %d: got name %q, company %q", l.Row, l.Name, l.Company)
	}
	return nil
}
