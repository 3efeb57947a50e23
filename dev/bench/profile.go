package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profileCeiling runs one more ceiling job with the worker's pprof endpoint
// on (ENRICHQ_METRICS_ADDR serves /debug/pprof/) and takes a CPU profile of the worker while the
// job runs, plus a heap profile at its end. The profile covers the job's
// expected duration (the best ceiling run of this bench, else 30 s).
func (b *bench) profileCeiling(ctx context.Context) error {
	if err := os.MkdirAll(b.opts.profileDir, 0o755); err != nil {
		return err
	}
	n := b.scaled(100_000, 200)
	secs := 30
	if m := b.report.byKey["ceiling.rate"]; m != nil && len(m.Samples) > 0 {
		best := 0.0
		for _, s := range m.Samples {
			best = math.Max(best, s.Value)
		}
		secs = max(1, int(math.Ceil(float64(n)/best)))
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
	defer cancel()
	st, err := b.startStack(ctx, ceilingSpec("profile", true))
	if err != nil {
		return err
	}
	defer st.stop()
	if st.pprofURL == "" {
		return fmt.Errorf("the worker did not report a pprof address (is it built from this tree?)")
	}
	b.logf("profile: %d-row ceiling job, worker CPU profile for %d s", n, secs)
	cpuPath := filepath.Join(b.opts.profileDir, "worker.cpu.pprof")
	got := make(chan error, 1)
	go func() {
		got <- fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", st.pprofURL, secs), cpuPath)
	}()
	took, err := b.runJob(ctx, st, n, "profile", 50*time.Millisecond)
	if err != nil {
		return err
	}
	if err := fetch(ctx, st.pprofURL+"/debug/pprof/heap", filepath.Join(b.opts.profileDir, "worker.heap.pprof")); err != nil {
		b.logf("profile: heap: %v", err)
	}
	if err := <-got; err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	b.logf("profile: job took %.2f s (%.0f rows/s with the profiler on); %s", took.Seconds(), float64(n)/took.Seconds(), cpuPath)
	// Summarise with the go tool when there is one.
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=25", filepath.Join(b.opts.bin, "worker"), cpuPath).Output()
	if err != nil {
		b.report.Profile = []string{"(go tool pprof unavailable: read " + cpuPath + " with `go tool pprof -top -cum " + cpuPath + "`)"}
		return nil
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		b.report.Profile = append(b.report.Profile, l)
	}
	b.report.Profile = append([]string{fmt.Sprintf("%s (job %.2f s, %.0f rows/s with the profiler on)", cpuPath, took.Seconds(), float64(n)/took.Seconds())}, b.report.Profile...)
	return nil
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileAPI starts a CPU profile of the API of st, for as long as the
// slowest ingest run so far took (else 20 s), written to name in the profile
// folder; the channel says when it is written.
func (b *bench) profileAPI(ctx context.Context, st *stack, name string) <-chan error {
	got := make(chan error, 1)
	if st.apiPprof == "" {
		got <- fmt.Errorf("the API did not report a pprof address (is it built from this tree?)")
		return got
	}
	if err := os.MkdirAll(b.opts.profileDir, 0o755); err != nil {
		got <- err
		return got
	}
	secs := 20
	if m := b.report.byKey["ingest.time"]; m != nil && len(m.Samples) > 0 {
		worst := 0.0
		for _, s := range m.Samples {
			worst = math.Max(worst, s.Value)
		}
		secs = max(1, int(math.Ceil(worst)))
	}
	path := filepath.Join(b.opts.profileDir, name)
	b.logf("profile: API CPU profile for %d s: %s", secs, path)
	go func() {
		got <- fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", st.apiPprof, secs), path)
	}()
	return got
}
