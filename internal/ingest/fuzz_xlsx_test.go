package ingest

import (
	"context"
	"io"
	"path/filepath"
	"testing"
)

// FuzzParseXLSXSheet feeds the sheet and shared strings readers any XML:
// a lookup is valid, a refusal is an *Error within the limits, nothing
// panics.
func FuzzParseXLSXSheet(f *testing.F) {
	for _, c := range [][2]string{
		{`<si><t>Company</t></si><si><t>Acme</t></si>`, `<row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="2"><c r="A2" t="s"><v>1</v></c></row>`},
		{`<si><r><t>Comp</t></r><r><t>any</t></r><rPh><t>x</t></rPh></si><si/>`, `<row><c t="s"><v>0</v></c></row><row><c t="inlineStr"><is><t>Be_x0041_</t></is></c></row>`},
		{`<x:si><x:t>name</x:t></x:si><si><t>company</t></si>`, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row r="3"><c r="B3" t="str"><v>Acme</v><f>A1</f></c><c r="A3" t="s"><v>9</v></c></row>`},
		{`<si><t>Company</t></si>`, `<row r="2"><c r="ZZZZ2"><v>1</v></c></row><row r="1"/>`},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, sst, sheet string) {
		path := filepath.Join(t.TempDir(), "f.xlsx")
		writeRawXLSX(t, path, func(w io.Writer) { io.WriteString(w, sst) }, func(w io.Writer) { io.WriteString(w, sheet) })
		var got []Lookup
		_, err := ParseXLSX(context.Background(), path, t.TempDir(), Options{Roles: fuzzRoles}, fuzzLimits, collect(&got))
		for _, l := range got {
			checkLookup(t, l)
		}
		if err != nil {
			checkError(t, err, fuzzLimits)
		}
	})
}
