package main

import (
	"bytes"
	"encoding/csv"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"-faults", "sigterm,sigkill,sigkill", "-rows", "100"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.faults, ",") != "sigkill,sigterm" || o.poisonRows != 3 {
		t.Fatalf("faults %v, poison rows %d", o.faults, o.poisonRows)
	}
	for _, bad := range [][]string{{"-faults", "meteor"}, {"-rows", "5"}, {"-lease", "10s"}, {"-base-faults", "fail=2"}, {"-vendor-faults", "fire=0.1"}, {"extra"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	f, err := parseFaults("fail=0.05,reset=0.01", time.Second)
	if err != nil || f.Fail != 0.05 || f.Reset != 0.01 || f.SlowDelay != "2s" {
		t.Fatalf("%+v %v", f, err)
	}
}

// The upload holds each input once (a repeat in the vendor's ledger is then
// a second payment), the poison rows are companies, and it is valid CSV.
func TestUploadCSV(t *testing.T) {
	b := uploadCSV("sigkill123456", 500, 7)
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) != 501 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	seen := map[string]bool{}
	poisoned := 0
	for _, r := range recs[1:] {
		in := strings.Join(r[1:4], "|")
		if seen[in] {
			t.Fatalf("input %q twice", in)
		}
		seen[in] = true
		if strings.Contains(r[1], poison) {
			poisoned++
		}
	}
	if poisoned != 7 {
		t.Fatalf("%d poison rows, want 7", poisoned)
	}
}
