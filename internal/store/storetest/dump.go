package storetest

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// DumpData is `pg_dump --data-only` of st's database: every row of every
// table as text (bytea in hex), what an erasure test searches for a person.
// The test is skipped when pg_dump is not on PATH.
func DumpData(tb testing.TB, st *store.Store) string {
	tb.Helper()
	url, ok := databases.Load(st)
	if !ok {
		tb.Fatal("storetest: a store not made by storetest.New or storetest.Open")
	}
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		tb.Skip("pg_dump is not on PATH (apt-get install postgresql-client)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--data-only", "--no-owner", "--dbname", url.(string))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("storetest: pg_dump: %v: %s", err, errb.String())
	}
	return out.String()
}
