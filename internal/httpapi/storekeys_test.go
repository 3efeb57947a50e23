package httpapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// An unknown bearer is answered from memory the second time: with the
// database closed, it is still a plain "unknown", while a key never seen
// needs the database (and fails).
func TestStoreKeysRememberUnknownKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	_, good, err := st.CreateAPIKey(ctx, tenantA, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := NewStoreKeys(nil, service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}}))
	if p, ok, err := keys.Principal(ctx, good); !ok || err != nil || p.Tenant != tenantA {
		t.Fatalf("a stored key: %+v %v %v", p, ok, err)
	}
	if _, ok, err := keys.Principal(ctx, "eq_made_up"); ok || err != nil {
		t.Fatalf("an unknown key: %v %v", ok, err)
	}
	st.Close()
	if _, ok, err := keys.Principal(ctx, "eq_made_up"); ok || err != nil {
		t.Fatalf("an unknown key again, the database closed: %v %v; want unknown from memory", ok, err)
	}
	if _, _, err := keys.Principal(ctx, "eq_other"); err == nil {
		t.Fatal("a key never seen was answered without the database")
	}
	if _, _, err := keys.Principal(ctx, good); err == nil {
		t.Fatal("a known key was answered from memory: revocation would not hold")
	}
}

func TestUnknownKeysExpireAndStayBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := newUnknownKeys(100, time.Minute, func() time.Time { return now })
	d := sha256.Sum256([]byte("k"))
	u.add(d)
	if !u.has(d) {
		t.Fatal("not remembered")
	}
	now = now.Add(time.Minute)
	if u.has(d) {
		t.Fatal("remembered past its TTL")
	}
	for i := range 1000 {
		u.add(sha256.Sum256(fmt.Appendf(nil, "key-%d", i)))
		if n := u.len(); n > 100 {
			t.Fatalf("%d entries after %d adds, max 100", n, i+1)
		}
	}
	if !u.has(sha256.Sum256([]byte("key-999"))) {
		t.Fatal("the newest key was evicted")
	}
}
