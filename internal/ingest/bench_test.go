package ingest

import (
	"bytes"
	"fmt"
	"testing"
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
