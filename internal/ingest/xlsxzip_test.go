package ingest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// zeros is n zero bytes, deflated, with their CRC-32: a part that unzips to
// n bytes from about n/1000.
type zeros struct {
	n   uint64
	crc uint32
	z   []byte
}

// bomb is the part: 1000 MiB, under the 1 GiB a 64 MiB upload may
// unzip to in all.
var bomb = sync.OnceValue(func() zeros { return deflateZeros(1000) })

// deflateZeros deflates mib MiB of zeros quickly.
func deflateZeros(mib int) zeros { return deflateMiB(make([]byte, 1<<20), mib) }

// deflateMiB deflates mib copies of block (a MiB) quickly: once the window
// holds only copies, each MiB flushed deflates to the same bytes, which are
// repeated rather than computed again.
func deflateMiB(block []byte, mib int) zeros {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.DefaultCompression)
	var flushed [3][]byte
	for i := range flushed {
		n := buf.Len()
		_, _ = w.Write(block)
		_ = w.Flush()
		flushed[i] = bytes.Clone(buf.Bytes()[n:])
	}
	if !bytes.Equal(flushed[1], flushed[2]) {
		panic("deflateMiB: a MiB deflates to other bytes each time")
	}
	n := buf.Len()
	_ = w.Close()
	end := bytes.Clone(buf.Bytes()[n:])
	z := append(flushed[0], bytes.Repeat(flushed[1], mib-1)...)
	h := crc32.NewIEEE()
	for range mib {
		_, _ = h.Write(block)
	}
	return zeros{n: uint64(mib) << 20, crc: h.Sum32(), z: append(z, end...)}
}

// withPart is the workbook of src with one more part, name, holding z: its
// header says it unzips to told bytes (0: the truth).
func withPart(t *testing.T, src, name string, z zeros, told uint64) string {
	t.Helper()
	zr, err := zip.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dst := filepath.Join(t.TempDir(), "bomb.xlsx")
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
	if told == 0 {
		told = z.n
	}
	pw, err := w.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: z.crc,
		CompressedSize64: uint64(len(z.z)), UncompressedSize64: told})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(z.z); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// parseMeasured parses the workbook in path and returns its error and the
// bytes the process allocated meanwhile (the test runs alone: it is not
// parallel).
func parseMeasured(t *testing.T, path string) (error, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ParseXLSX(context.Background(), path, t.TempDir(), Options{Roles: []string{"CTO"}}, DefaultLimits(), func(Lookup) error { return nil })
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc
}

// A workbook whose part other than a sheet unzips to 1000 MiB, from a file
// of about a MB, is refused naming the part, without the process
// allocating anything near it: so is a part whose header says a KiB and
// whose data unzips to 1000 MiB, and a sheet of the same. Not parallel: it measures the
// process's allocations.
func TestParseXLSXRefusesZipBombs(t *testing.T) {
	list := writeXLSX(t, map[string][][]any{"S": {{"Company"}, {"Acme"}}}, "S")
	const budget = 300 << 20
	for _, c := range []struct {
		name, part string
		told       uint64
		status     int
	}{
		{"a document property of 1000 MiB", "docProps/pad.xml", 0, http.StatusRequestEntityTooLarge},
		{"a part excelize reads whole, its header saying a KiB", "xl/pad.xml", 1 << 10, http.StatusRequestEntityTooLarge},
		{"a sheet of 1000 MiB", "xl/worksheets/sheet9.xml", 0, http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			bomb := withPart(t, list, c.part, bomb(), c.told)
			if fi, _ := os.Stat(bomb); fi.Size() > 2<<20 {
				t.Fatalf("the bomb is %d bytes", fi.Size())
			}
			err, alloc := parseMeasured(t, bomb)
			var e *Error
			if !errors.As(err, &e) || e.HTTPStatus() != c.status || !strings.Contains(e.Error(), c.part) {
				t.Fatalf("got %v, want a %d naming %s", err, c.status, c.part)
			}
			if alloc > budget {
				t.Fatalf("refusing the bomb allocated %d MB; the bound is %d MB", alloc>>20, budget>>20)
			}
		})
	}
}

// Too many parts, or a zip directory too large to read, are refused before
// archive/zip reads them.
func TestParseXLSXRefusesTooManyParts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		parts   int
		nameLen int
		want    string
	}{
		{"parts", xlsxMaxEntries + 1, 10, "parts"},
		{"directory", 20_000, 250, "zip directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "many.xlsx")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w := zip.NewWriter(f)
			for i := range c.parts {
				name := fmt.Sprintf("docProps/%0*d.xml", c.nameLen, i)
				if _, err := w.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Store}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			_, err = ParseXLSX(context.Background(), path, t.TempDir(), Options{}, DefaultLimits(), nil)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeTooLarge || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want too_large saying %q", err, c.want)
			}
		})
	}
}

// Parts a list does not need (an image, a large document property that
// compresses as real text does, styles) are left out: the sheet still
// reads.
func TestParseXLSXLeavesOutPartsItDoesNotNeed(t *testing.T) {
	t.Parallel()
	list := writeXLSX(t, map[string][][]any{"S": {{"Company"}, {"Acme"}}}, "S")
	img := make([]byte, 3<<20)
	_, _ = rand.Read(img)
	var text bytes.Buffer
	for i := 0; text.Len() < 12<<20; i++ {
		fmt.Fprintf(&text, "<p n=\"%d\">line %d of a long document property</p>\n", i, i*7919%100003)
	}
	for _, part := range []struct {
		name string
		body []byte
	}{{"xl/media/image1.png", img}, {"docProps/custom.xml", text.Bytes()}} {
		list = withStored(t, list, part.name, part.body)
	}
	var got []Lookup
	_, err := ParseXLSX(context.Background(), list, t.TempDir(), Options{Roles: []string{"CTO"}}, DefaultLimits(), collect(&got))
	if err != nil || len(got) != 1 || got[0].Company != "Acme" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// withStored is the workbook of src with one more part, deflated.
func withStored(t *testing.T, src, name string, body []byte) string {
	t.Helper()
	zr, err := zip.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dst := filepath.Join(t.TempDir(), "more.xlsx")
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
	pw, err := w.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(pw, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
