package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The audit log refuses UPDATE, DELETE and TRUNCATE.
func TestAuditLogAppendOnly(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	if err := st.Audit(ctx, store.AuditLine{Tenant: "acme", KeyID: "k", Action: store.AuditFeedRead, Rows: 3}); err != nil {
		t.Fatal(err)
	}
	if err := st.Audit(ctx, store.AuditLine{Tenant: "", KeyID: "k", Action: store.AuditFeedRead}); err != store.ErrNoTenant {
		t.Fatalf("an empty tenant: %v", err)
	}
	for _, sql := range []string{`UPDATE audit_log SET rows = 0`, `DELETE FROM audit_log`, `TRUNCATE audit_log`} {
		if _, err := store.PoolForTest(st).Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused", sql, err)
		}
	}
	lines, err := st.AuditLog(ctx, "acme", 0, 10)
	if err != nil || len(lines) != 1 || lines[0].Rows != 3 || lines[0].Action != store.AuditFeedRead {
		t.Fatalf("lines %+v, %v", lines, err)
	}
	if lines, _ := st.AuditLog(ctx, "beta", 0, 10); len(lines) != 0 {
		t.Fatalf("another tenant sees %d lines", len(lines))
	}
}
