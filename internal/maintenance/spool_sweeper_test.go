package maintenance_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/spool"
)

// The sweeper removes the spool folders no process holds (a crash's), and
// those left half-made for longer than spool.NewLeftAfter by its clock; it
// keeps a folder in use, a fresh half-made one, and what is not a spool
// folder.
func TestSpoolSweeperRemovesWhatACrashLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live, err := spool.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	if err := os.WriteFile(filepath.Join(live.Path, "upload"), []byte("email\njane@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	made := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, d := range []string{spool.Prefix + "crashed", ".enrichq-upload-new-halfmade", "someone-elses"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "upload"), []byte("a list"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, d), made, made); err != nil {
			t.Fatal(err)
		}
	}
	var now time.Time
	sw := maintenance.NewSpoolSweeper(maintenance.SpoolSweeperConfig{Dir: dir, Now: func() time.Time { return now }})
	for _, c := range []struct {
		at      time.Time
		removed int
		left    []string
	}{
		{made.Add(spool.NewLeftAfter - time.Minute), 1, []string{".enrichq-upload-new-halfmade", filepath.Base(live.Path), "someone-elses"}},
		{made.Add(spool.NewLeftAfter + time.Minute), 1, []string{filepath.Base(live.Path), "someone-elses"}},
	} {
		now = c.at
		n, err := sw.Step(t.Context())
		if err != nil || n != c.removed {
			t.Fatalf("at %s: removed %d, %v; want %d", c.at, n, err, c.removed)
		}
		if left := names(t, dir); !slices.Equal(left, c.left) {
			t.Fatalf("at %s: left %v, want %v", c.at, left, c.left)
		}
	}
	live.Remove()
	if n, err := sw.Step(t.Context()); err != nil || n != 0 || len(names(t, dir)) != 1 {
		t.Fatalf("after the live upload ended: removed %d, %v, left %v", n, err, names(t, dir))
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
