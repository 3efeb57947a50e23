package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/spool"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The raw extra columns of a job being made wait in a file inside a spool
// folder, locked while the job is made: a crash leaves the folder to the
// spool sweep (internal/spool, the scheduler's spool sweeper), never a
// loose file no sweep removes. Not parallel: it points TMPDIR at a folder
// of its own.
func TestExtrasWaitInASweptSpoolFolder(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	st := storetest.New(t)
	var during []string
	_, _, err := st.CreateJob(context.Background(), store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10},
		func(add func(store.NewRow) error) error {
			for i := range 3 {
				if err := add(store.NewRow{InputRow: i + 1, Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Co",
					Extra: map[string]string{"crm": "raw"}}); err != nil {
					return err
				}
			}
			err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && p != dir {
					during = append(during, strings.TrimPrefix(p, dir+string(filepath.Separator)))
				}
				return err
			})
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	var file bool
	for _, p := range during {
		top, rest, nested := strings.Cut(p, string(filepath.Separator))
		if !strings.HasPrefix(top, spool.Prefix) {
			t.Errorf("%s: outside a spool folder, no sweep removes it after a crash", p)
		}
		file = file || (nested && strings.HasPrefix(rest, "enrichq-extras-"))
	}
	if !file {
		t.Fatalf("no extras file seen while the job was made (%v): the test proves nothing", during)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left after the job was made: %v", left)
	}
}
