package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The API's pool size and session timeouts are what it says, and a
// migration is not held to them.
func TestOpenSetsPoolAndTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	st, err := store.Open(ctx, url, store.Options{MaxConns: 3, StatementTimeout: 1500 * time.Millisecond, IdleInTxTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := st.PoolSize(); n != 3 {
		t.Fatalf("pool size %d, want 3", n)
	}
	for name, want := range map[string]string{"statement_timeout": "1500ms", "idle_in_transaction_session_timeout": "2s"} {
		if got, err := st.Setting(ctx, name); err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if err := st.Migrate(ctx, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}

	// Settings in the URL win.
	st2, err := store.Open(ctx, withQuery(url, "pool_max_conns=5&statement_timeout=7000"), store.Options{MaxConns: 3, StatementTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if got, err := st2.Setting(ctx, "statement_timeout"); err != nil || got != "7s" || st2.PoolSize() != 5 {
		t.Fatalf("URL settings: statement_timeout %q (%v), pool %d; want 7s and 5", got, err, st2.PoolSize())
	}
}

func withQuery(url, q string) string {
	if strings.Contains(url, "?") {
		return url + "&" + q
	}
	return url + "?" + q
}

// The query modes that take parameter types from Go's are refused at once,
// naming the one that works through PgBouncer; the others open.
func TestOpenRefusesExecModesWithoutServerTypes(t *testing.T) {
	t.Parallel()
	url := storetest.ServerURL(t, "postgres")
	for _, mode := range []string{"exec", "simple_protocol"} {
		st, err := store.Open(context.Background(), withQuery(url, "default_query_exec_mode="+mode), store.Options{})
		if err == nil {
			st.Close()
			t.Fatalf("default_query_exec_mode=%s opened", mode)
		}
		if !strings.Contains(err.Error(), "default_query_exec_mode="+mode) || !strings.Contains(err.Error(), "cache_describe") {
			t.Fatalf("default_query_exec_mode=%s: %v", mode, err)
		}
	}
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec"} {
		st, err := store.Open(context.Background(), withQuery(url, "default_query_exec_mode="+mode), store.Options{})
		if err != nil {
			t.Fatalf("default_query_exec_mode=%s: %v", mode, err)
		}
		st.Close()
	}
}
