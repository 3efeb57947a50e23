package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func TestConnectStateWorksOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	if err := st.SaveConnectState(ctx, []byte("hash-1"), "acme", []byte("v1"), t0, t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveConnectState(ctx, []byte("hash-2"), "acme", []byte("v2"), t0, t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	tenant, v, err := st.TakeConnectState(ctx, []byte("hash-1"), t0.Add(time.Minute))
	if err != nil || tenant != "acme" || string(v) != "v1" {
		t.Fatalf("take: %q %q %v", tenant, v, err)
	}
	if _, _, err := st.TakeConnectState(ctx, []byte("hash-1"), t0.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second take: %v, want ErrNotFound", err)
	}
	if _, _, err := st.TakeConnectState(ctx, []byte("forged"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown state: %v, want ErrNotFound", err)
	}
	if _, _, err := st.TakeConnectState(ctx, []byte("hash-2"), t0.Add(10*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired state: %v, want ErrNotFound", err)
	}
	_ = st.SaveConnectState(ctx, []byte("hash-3"), "acme", []byte("v3"), t0, t0.Add(time.Minute))
	if n, err := st.DeleteExpiredConnectStates(ctx, t0.Add(2*time.Minute)); err != nil || n != 1 {
		t.Errorf("delete expired: %d, %v", n, err)
	}
}
