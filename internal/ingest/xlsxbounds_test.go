package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// withSheets is the workbook of src with n more sheets of z each.
func withSheets(t *testing.T, src string, n int, z zeros) string {
	t.Helper()
	zr, err := zip.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dst := filepath.Join(t.TempDir(), "sheets.xlsx")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := zip.NewWriter(out)
	for _, zf := range zr.File {
		if err := w.Copy(zf); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		pw, err := w.CreateRaw(&zip.FileHeader{Name: fmt.Sprintf("xl/worksheets/sheet%d.xml", i+10), Method: zip.Deflate,
			CRC32: z.crc, CompressedSize64: uint64(len(z.z)), UncompressedSize64: z.n})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(z.z); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// dirPeak samples the bytes of the files under dir until stop is closed,
// and returns the most it saw.
func dirPeak(dir string, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			var n int64
			_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if fi, err := d.Info(); err == nil {
						n += fi.Size()
					}
				}
				return nil
			})
			peak = max(peak, n)
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return out
}

// emptyRows is a MiB of XML a sheet might hold: empty rows.
func emptyRows() []byte { return bytes.Repeat([]byte("<row/>\n\t"), 1<<17) }

// The workbook: 1,000 sheets of 1 MiB each, about a MB zipped, is
// refused naming a part and the ratio, with nothing written to the
// temporary folder (every part's ratio is checked before any is unzipped;
// a sheet is never unzipped to disk). Not parallel: TMPDIR is the test's.
func TestParseXLSXThousandSheetsWriteNothing(t *testing.T) {
	list := writeXLSX(t, map[string][][]any{"S": {{"Company"}, {"Acme"}}}, "S")
	wb := withSheets(t, list, 1000, deflateMiB(emptyRows(), 1))
	if fi, _ := os.Stat(wb); fi.Size() > 2<<20 {
		t.Fatalf("the workbook is %d bytes", fi.Size())
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stop := make(chan struct{})
	peak := dirPeak(tmp, stop)
	_, err := ParseXLSX(context.Background(), wb, tmp, Options{Roles: []string{"CTO"}}, DefaultLimits(), func(Lookup) error { return nil })
	close(stop)
	p := <-peak
	t.Logf("the temporary folder's peak: %d bytes", p)
	if p > 64<<10 {
		t.Fatalf("the temporary folder reached %d bytes refusing the workbook", p)
	}
	var e *Error
	if !errors.As(err, &e) || e.HTTPStatus() != http.StatusRequestEntityTooLarge || !strings.Contains(e.Message, "xl/worksheets/sheet") ||
		!strings.Contains(e.Message, fmt.Sprintf("at most %d times", xlsxMaxRatio)) {
		t.Fatalf("got %v, want a 413 naming a sheet and the ratio", err)
	}
}

// A part whose header tells a size its zipped data cannot hold, and a part
// of a few KiB zipped beyond the ratio, are refused naming the part, though
// neither would be read.
func TestParseXLSXChecksEveryPartsHeader(t *testing.T) {
	t.Parallel()
	list := writeXLSX(t, map[string][][]any{"S": {{"Company"}, {"Acme"}}}, "S")
	small, more := deflateZeros(1), deflateZeros(4) // 1 MiB from about a KiB; 4 MiB from about 4 KiB
	for _, c := range []struct {
		name, part string
		z          zeros
		told       uint64
		want       string
	}{
		{"told less than its zipped data", "docProps/app2.xml", more, 100, "zipped to"},
		{"a small part past the ratio", "docProps/pad.xml", small, 0, "times its size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wb := withPart(t, list, c.part, c.z, c.told)
			_, err := ParseXLSX(context.Background(), wb, t.TempDir(), Options{Roles: []string{"CTO"}}, DefaultLimits(), nil)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeTooLarge || !strings.Contains(e.Message, c.part) || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want too_large naming %s, saying %q", err, c.part, c.want)
			}
		})
	}
}

// Shared strings and inline strings resolve to their text: rich-text runs
// joined, phonetic runs left out, whitespace as stored (xml:space), Excel's
// _xHHHH_ escapes read, a prefixed name space, and an inline string's runs.
func TestParseXLSXStrings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "strings.xlsx")
	writeRawXLSX(t, path, func(w io.Writer) {
		io.WriteString(w, `<si><t>Name</t></si><si><t>Company</t></si>`+
			`<si><r><t>Ac</t></r><r><rPr><b/></rPr><t xml:space="preserve">me  Corp </t></r><rPh sb="0" eb="1"><t>アクメ</t></rPh><phoneticPr fontId="1"/></si>`+
			`<si><t xml:space="preserve">  Jane  Doe </t></si>`+
			`<si><t>R&amp;D_x0020_Lab_x005F_x0041_</t></si>`+
			`<si/>`+
			`<si><t>Bob</t></si>`)
	}, func(w io.Writer) {
		io.WriteString(w, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>`+
			`<row r="2"><c r="A2" t="s"><v>3</v></c><c r="B2" t="s"><v> 2 </v></c></row>`+
			`<row r="4"><c r="A4" t="inlineStr"><is><t>Eve</t></is></c><c r="B4" t="inlineStr"><is><r><t>Be</t></r><r><t>ta</t></r><rPh><t>x</t></rPh></is></c></row>`+
			`<row r="5"><c r="B5" t="s"><v>5</v></c></row>`+
			`<row r="6"><c r="A6" t="s"><v>6</v></c><c t="s"><v>4</v></c></row>`)
	})
	var got []Lookup
	_, err := ParseXLSX(context.Background(), path, t.TempDir(), Options{Roles: []string{"CTO"}}, DefaultLimits(), collect(&got))
	want := []Lookup{
		{Row: 1, Name: "Jane  Doe", Company: "Acme  Corp"},
		{Row: 3, Name: "Eve", Company: "Beta"},
		{Row: 5, Name: "Bob", Company: "R&D Lab_x0041_"},
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %+v, %v", got, err)
	}
	for i, w := range want {
		if g := got[i]; g.Row != w.Row || g.Name != w.Name || g.Company != w.Company {
			t.Errorf("lookup %d = row %d %q at %q, want row %d %q at %q", i, g.Row, g.Name, g.Company, w.Row, w.Name, w.Company)
		}
	}
}

// A shared string index outside the table, or not a number, is refused
// naming the row and the column.
func TestParseXLSXBadSharedStringIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ v, want string }{{"3", "shared string 3 is not in"}, {"-1", "shared string -1 is not in"}, {"x1", `shared string index "x1" is not a number`}} {
		t.Run(c.v, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "index.xlsx")
			writeRawXLSX(t, path, func(w io.Writer) {
				io.WriteString(w, `<si><t>Name</t></si><si><t>Company</t></si><si><t>Acme</t></si>`)
			}, func(w io.Writer) {
				io.WriteString(w, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>`+
					`<row r="2"><c r="A2"><v>7</v></c><c r="B2" t="s"><v>2</v></c></row>`+
					`<row r="3"><c r="A3"><v>8</v></c><c r="B3" t="s"><v>`+c.v+`</v></c></row>`)
			})
			_, err := ParseXLSX(context.Background(), path, t.TempDir(), Options{Roles: []string{"CTO"}}, DefaultLimits(), nil)
			checkResult(t, err, nil, nil, CodeMalformedXLSX, []at{{2, "Company", "cell B3: the " + c.want}})
		})
	}
}

// A workbook of 300,000 rows of 2 distinct shared strings each (600,000
// strings) is read right, its heap staying small: the strings' index is on
// disk, not in memory (excelize's held about 40 bytes a string: 24 MB and
// more here). A bound, generous, not a measurement: the numbers are
// BenchmarkParseXLSXStrings'. Not parallel: it reads the process's heap.
func TestParseXLSXManyStringsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 300,000-row workbook")
	}
	const rows = 300_000
	path := filepath.Join(t.TempDir(), "many.xlsx")
	writeStringsWorkbook(t, path, rows)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	var n atomic.Int64
	_, err := ParseXLSX(context.Background(), path, t.TempDir(), Options{}, DefaultLimits(), func(l Lookup) error {
		if err := checkStringsLookup(l); err != nil {
			return err
		}
		if n.Add(1)%5000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil || n.Load() != rows {
		t.Fatalf("%d lookups, %v", n.Load(), err)
	}
	if grew := int64(peak) - int64(base); grew > 16<<20 {
		t.Fatalf("the heap grew by %d MB reading %d strings; the bound is 16 MB", grew>>20, 2*rows)
	}
}
