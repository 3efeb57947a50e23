package store_test

import (
	"context"
	"testing"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A key is live while it is stored for its tenant and not revoked, however
// it was revoked; an id that is no stored key's is not live.
func TestAPIKeyLive(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	a, _, err := st.CreateAPIKey(ctx, "acme", "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := st.CreateAPIKey(ctx, "acme", "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	live := func(tenant, id string) bool {
		t.Helper()
		ok, err := st.APIKeyLive(ctx, tenant, id)
		if err != nil {
			t.Fatalf("APIKeyLive(%q, %q): %v", tenant, id, err)
		}
		return ok
	}
	if !live("acme", a.ID) || !live("acme", b.ID) {
		t.Fatal("new keys are not live")
	}
	for _, c := range [][2]string{{"beta", a.ID}, {"acme", "env:0123abcd"}, {"acme", ""}, {"acme", "00000000-0000-0000-0000-000000000000"}} {
		if live(c[0], c[1]) {
			t.Errorf("tenant %q, id %q is live", c[0], c[1])
		}
	}
	if err := st.RevokeAPIKey(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	storetest.RevokeAPIKeyInSQL(t, st, b.ID)
	if live("acme", a.ID) || live("acme", b.ID) {
		t.Error("a revoked key is live")
	}
}
