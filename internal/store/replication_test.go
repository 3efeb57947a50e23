package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func TestReplicationSynchronous(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		commit, names string
		want          bool
	}{
		{"on", "", false},
		{"on", "standby1", true},
		{"remote_apply", "FIRST 1 (a, b)", true},
		{"remote_write", "ANY 1 (a, b)", true},
		{"local", "standby1", false},
		{"off", "standby1", false},
	} {
		if got := (store.Replication{SynchronousCommit: c.commit, SynchronousStandbyNames: c.names}).Synchronous(); got != c.want {
			t.Errorf("synchronous_commit=%s synchronous_standby_names=%q: Synchronous %v, want %v", c.commit, c.names, got, c.want)
		}
	}
}

// The test server has no standby: the services' start warns, once.
func TestCheckReplicationWarnsWithoutAStandby(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	var buf bytes.Buffer
	if st.CheckReplication(context.Background(), slog.New(slog.NewTextHandler(&buf, nil))) {
		t.Skip("the test server has a synchronous standby")
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 || !strings.Contains(buf.String(), "synchronous_standby_names") {
		t.Fatalf("%d warnings: %s", n, buf.String())
	}
}
