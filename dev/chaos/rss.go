package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sampleRSS samples the workers' resident memory every 200 ms until the
// returned function is called, which returns the peak.
func (e *env) sampleRSS(ctx context.Context) func() string {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			for _, w := range e.workers {
				if kb := rssKB(w.Pid()); kb > 0 {
					mu.Lock()
					peak = max(peak, kb)
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() string {
		cancel()
		<-done
		if peak == 0 {
			return "unknown"
		}
		return fmt.Sprintf("%.0f MB", float64(peak)/1024)
	}
}

// rssKB reads VmRSS of a process from /proc (Linux); 0 when unknown.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
