package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a strings.Builder safe to read while run writes its logs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-keys", "k1,k2", "-profile-hit-rate", "1", "-seed", "3"}, outW, &stderr)
		outW.Close()
		done <- err
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v (stderr: %s)", err, stderr.String())
	}
	go io.Copy(io.Discard, outR)
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "fakevendor listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q", line)
	}

	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/profile?profile_url=https://platform.example/in/jane-doe", nil)
	req.Header.Set("Authorization", "Bearer k2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		ProfileURL string `json:"profile_url"`
		Name       string `json:"name"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	if resp.StatusCode != 200 || rec.Name != "Jane Doe" || resp.Header.Get("X-Credits-Charged") != "1" {
		t.Fatalf("profile: %d %+v", resp.StatusCode, rec)
	}

	resp, err = http.Get(base + "/_fake/ledger")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		TotalCredits int64 `json:"total_credits"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&sum)
	resp.Body.Close()
	if sum.TotalCredits != 1 {
		t.Fatalf("ledger total %d, want 1", sum.TotalCredits)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(stderr.String(), "fakevendor stopped") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-fail-rate", "2"}, {"-keys", ""}, {"-nope"}, {"extra"}, {"-addr", "256.0.0.1:0"}} {
		if err := run(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) = nil", args)
		}
	}
}
