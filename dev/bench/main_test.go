package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// The best order per segment takes, segment by segment, the fixed order
// that spent least per matched row there; the best fixed order is the
// cheapest over the whole list, never cheaper than the best per segment.
func TestBestOrdersMeasured(t *testing.T) {
	perSeg := map[string][]wfResult{
		"seed,pdl": {{units: 200, matched: 100, rows: 120}, {units: 400, matched: 100, rows: 120}, {units: 380, matched: 100, rows: 120}},
		"pdl,seed": {{units: 240, matched: 100, rows: 120}, {units: 300, matched: 100, rows: 120}, {units: 290, matched: 100, rows: 120}},
	}
	best, orders := wfBestPerSegment(perSeg)
	if best.units != 200+300+290 || best.matched != 300 || orders["com"] != "seed,pdl" || orders["fr"] != "pdl,seed" || orders["de"] != "pdl,seed" {
		t.Errorf("best per segment %+v by %v; want 790 units, com by [seed pdl], fr and de by [pdl seed]", best, orders)
	}
	fixed := map[string]wfResult{
		"seed,pdl": {units: 980, matched: 300, rows: 360},
		"pdl,seed": {units: 830, matched: 300, rows: 360},
	}
	bf, key := wfBestFixed(fixed)
	if key != "pdl,seed" || bf.units != 830 || best.ratio(bf) >= 1 {
		t.Errorf("best fixed %s %+v; best per segment ÷ it %v, want below 1", key, bf, best.ratio(bf))
	}
}
