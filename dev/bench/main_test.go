package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every scenario runs, tiny, against real Postgres, Redis and freshly built
// binaries, and the table and its JSON come out. Nothing here is timed: the
// figures of a run this small say nothing (and the test asserts none).
func TestBenchRunsEveryScenarioSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs every scenario: not with -short")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "../../cmd/api", "../../cmd/worker", "../../cmd/scheduler", "../fakevendor", "../fakepdl")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "bench.json")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := []string{"-bin", bin, "-scale", "0.005", "-small-rows", "20", "-poll-rate", "50", "-logs", filepath.Join(dir, "logs"),
		"-out", out, "-timeout", "3m", "-settle", "0", "-locale", "C"}
	err := run(ctx, args, os.Getenv, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	table := stdout.String()
	for _, d := range metricDefs {
		line := ""
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, "| "+d.Name+" |") {
				line = l
			}
		}
		if line == "" {
			t.Errorf("the table has no line %q:\n%s", d.Name, table)
			continue
		}
		if !strings.HasSuffix(line, "| pass |") && !strings.HasSuffix(line, "| miss |") {
			t.Errorf("line %q has no result", line)
		}
	}
	for _, want := range []string{"Machine: ", "databases in locale C;", "Peak RSS (VmHWM), MB: seed: api"} {
		if !strings.Contains(table, want) {
			t.Errorf("the output lacks %q:\n%s", want, table)
		}
	}
	var rep report
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("bench.json: %v", err)
	}
	if len(rep.Metrics) != len(metricDefs) || rep.Machine.CPUs == 0 || len(rep.RSS) != len(allScenarios) || rep.Machine.DBLocale != "C" {
		t.Fatalf("bench.json: %d metrics, machine %+v, rss %v", len(rep.Metrics), rep.Machine, rep.RSS)
	}
	for _, m := range rep.Metrics {
		if len(m.Samples) != 1 || m.Best == nil || m.Pass == nil {
			t.Errorf("metric %s: %d runs, best %v", m.Key, len(m.Samples), m.Best)
		}
	}
}

// -scenario and -scale are checked before anything starts.
func TestBenchFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-scenario", "nope"}, os.Getenv, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("unknown scenario: %v", err)
	}
	if err := run(context.Background(), []string{"-scale", "0"}, os.Getenv, &stdout, &stderr); err == nil {
		t.Fatal("-scale 0 accepted")
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{{15234.4, "rows/s", "15,234 rows/s"}, {0.612, "×", "0.61"}, {4.2, "s", "4.20 s"}, {103.4, "%", "103 %"}, {1234567, "rows/s", "1,234,567 rows/s"}} {
		if got := formatValue(c.v, c.unit); got != c.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

// The best order per segment puts first the vendor with the least expected
// units per matched row: a per-call vendor that finds most rows of a segment
// before a per-match one that finds few, and after it where it finds many.
func TestBestOrdersFromTruth(t *testing.T) {
	seed := vendorTruth{name: "seed", rates: map[string]float64{"com": 0.85, "fr": 0.25}, perAsk: 2}
	pdl := vendorTruth{name: "pdl", rates: map[string]float64{"com": 0.1, "fr": 0.8}, perMatch: 3}
	// com: [seed pdl] 2 + 0.15·0.1·3 = 2.045 units for 0.865 found;
	// [pdl seed] 0.3 + 0.9·2 = 2.1 for the same: seed first.
	// fr: [seed pdl] 2 + 0.75·2.4 = 3.8; [pdl seed] 2.4 + 0.2·2 = 2.8: pdl first.
	units, found := orderCost([]vendorTruth{seed, pdl}, "com")
	if math.Abs(units-2.045) > 1e-9 || math.Abs(found-0.865) > 1e-9 {
		t.Fatalf("[seed pdl] on com: %g units, %g found; want 2.045, 0.865", units, found)
	}
	got := bestOrders([]vendorTruth{pdl, seed}, []string{"com", "fr", "xx"})
	want := map[string][]string{"com": {"seed", "pdl"}, "fr": {"pdl", "seed"}}
	for _, seg := range []string{"com", "fr"} {
		if !slices.Equal(got[seg], want[seg]) {
			t.Errorf("segment %s: best order %v, want %v", seg, got[seg], want[seg])
		}
	}
	if got["xx"] != nil { // nobody finds anyone there: no order is best
		t.Errorf("segment xx, found by none: %v, want none", got["xx"])
	}
	// A dearer per-match price turns fr around: [pdl seed] 0.8·10 + 0.2·2 = 8.4
	// against [seed pdl] 2 + 0.75·8 = 8.
	pdl.perMatch = 10
	if got := bestOrders([]vendorTruth{pdl, seed}, []string{"fr"}); !slices.Equal(got["fr"], []string{"seed", "pdl"}) {
		t.Errorf("fr with pdl at 10 a match: %v, want [seed pdl]", got["fr"])
	}
}
