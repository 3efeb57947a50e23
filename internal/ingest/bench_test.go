package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"
)

// Benchmarks over 100,000 rows; a full upload (MaxLookups) is ten times that.
func BenchmarkParseCSV(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("ref,profile_url,name,company,email,notes\r\n")
	for i := range 100_000 {
		fmt.Fprintf(&buf, "crm-%d,https://www.platform.example/in/person-%d/,,,,\"note, %d\"\r\n", i, i, i)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if err := csvErr(bytes.NewReader(buf.Bytes()), Options{}, Limits{}, func(Lookup) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"name": "bench", "rows": [`)
	for i := range 100_000 {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"ref": "crm-%d", "profile_url": "https://platform.example/in/person-%d", "extra": {"notes": "n"}}`, i, i)
	}
	buf.WriteString(`]}`)
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		req, err := DecodeJSON(bytes.NewReader(buf.Bytes()), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if err := ExpandRows(req.Rows, Options{}, Limits{}, func(Lookup) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseXLSXStrings measures the workbook, 1,000,000 rows of
// 2 distinct shared strings each (2,000,000 strings), parsed once and four
// at once, each time in a child process of its own (this test binary,
// TestXLSXChild): it reports the child's peak RSS (VmHWM) and the most its
// temporary folder held. One iteration is enough:
//
//	go test ./internal/ingest -run '^$' -bench ParseXLSXStrings -benchtime 1x
func BenchmarkParseXLSXStrings(b *testing.B) {
	path := filepath.Join(b.TempDir(), "strings.xlsx")
	writeStringsWorkbook(b, path, 1_000_000)
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("at-once=%d", n), func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run", "^TestXLSXChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("ENRICHQ_XLSX_CHILD=%d:%s", n, path))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				var rss, tmp, lookups int64
				if _, err := fmt.Sscanf(childLine(out), "xlsx-child vmhwm=%d tmp=%d lookups=%d", &rss, &tmp, &lookups); err != nil || lookups != int64(n)*1_000_000 {
					b.Fatalf("child: %v (%d lookups): %s", err, lookups, out)
				}
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(tmp)/(1<<20), "peak-tmp-MiB")
			}
		})
	}
}

// childLine is the line of TestXLSXChild's result in out.
func childLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "xlsx-child ") {
			return l
		}
	}
	return ""
}

// TestXLSXChild is BenchmarkParseXLSXStrings's child: with
// ENRICHQ_XLSX_CHILD=N:PATH it parses the workbook PATH N times at once,
// each into a temporary folder of its own, and prints its peak RSS and the
// most the temporary folders held; without it, it does nothing.
func TestXLSXChild(t *testing.T) {
	spec := os.Getenv("ENRICHQ_XLSX_CHILD")
	if spec == "" {
		t.Skip("BenchmarkParseXLSXStrings's child")
	}
	nStr, path, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nStr)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	stop := make(chan struct{})
	peak := dirPeak(tmp, stop)
	var lookups atomic.Int64
	var g errgroup.Group
	for range n {
		g.Go(func() error {
			_, err := ParseXLSX(context.Background(), path, tmp, Options{}, DefaultLimits(), func(l Lookup) error {
				lookups.Add(1)
				return checkStringsLookup(l)
			})
			return err
		})
	}
	err = g.Wait()
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	var hwm int64
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	fmt.Printf("xlsx-child vmhwm=%d tmp=%d lookups=%d\n", hwm<<10, <-peak, lookups.Load())
}
