package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/spool"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// TestMain runs this test binary as the API itself when asked to: a test
// that kills the API with SIGKILL needs it in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("ENRICHQ_TEST_AS_API") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// An API killed with SIGKILL in the middle of an upload leaves the upload's
// spool folder, a raw list, behind; the API started again removes it before
// it listens.
func TestRestartAfterAKillRemovesItsSpool(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	var b [6]byte
	_, _ = rand.Read(b[:])
	env := append(os.Environ(), "ENRICHQ_TEST_AS_API=1", "TMPDIR="+tmp,
		"DATABASE_URL="+storetest.NewDatabase(t), "REDIS_URL="+redisURL(), "ENRICHQ_API_ADDR=127.0.0.1:0",
		"ENRICHQ_API_KEYS=acme:test-key-0123", "ENRICHQ_QUEUE=test-"+hex.EncodeToString(b[:]))

	api, base := startAPI(t, env)
	pr, pw := io.Pipe()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/jobs", pr)
		req.Header.Set("Authorization", "Bearer test-key-0123")
		req.Header.Set("Content-Type", "text/csv")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	defer pw.Close()
	fmt.Fprint(pw, "email\njane@example.com\n") // and no more: the upload is in the middle
	for len(spooled(t, tmp)) == 0 {
		time.Sleep(5 * time.Millisecond) // polling, not timing
	}
	if err := api.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = api.Wait()
	if left := spooled(t, tmp); len(left) != 1 {
		t.Fatalf("after the kill: spooled %v, want the upload's", left)
	}

	api, _ = startAPI(t, env)
	if left := spooled(t, tmp); len(left) != 0 {
		t.Fatalf("the API started again with %v left in its spool folder", left)
	}
	_ = api.Process.Kill()
	_ = api.Wait()
}

// startAPI starts the API in a process of its own and returns it once it
// listens, with its address.
func startAPI(t *testing.T, env []string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0]) // TestMain makes it the API
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if addr, ok := strings.CutPrefix(lines.Text(), "api listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return cmd, addr
		}
	}
	_ = cmd.Wait()
	t.Fatalf("the API ended before it listened: %v\n%s", lines.Err(), stderr.String())
	return nil, ""
}

// spooled lists the spool files in dir holding data: uploads received.
func spooled(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, spool.Prefix+"*", "upload"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 0 {
			out = append(out, f)
		}
	}
	return out
}
