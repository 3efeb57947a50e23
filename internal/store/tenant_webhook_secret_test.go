package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A rotation makes a new secret, shown once, and stamps the time.
func TestRotateWebhookSecret(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	if _, err := st.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	before, _ := st.TenantWebhookSecret(ctx, "acme")
	s0, _ := st.GetTenantSettings(ctx, "acme")
	secret, at, err := st.RotateWebhookSecret(ctx, "acme")
	if err != nil || secret == before || !strings.HasPrefix(secret, "whsec_") || at.Before(s0.WebhookSecretRotatedAt) {
		t.Fatalf("rotate: %q at %s (%v), before %q", secret, at, err, before)
	}
	if now, _ := st.TenantWebhookSecret(ctx, "acme"); now != secret {
		t.Fatalf("stored secret %q, want the rotated one", now)
	}
	if _, _, err := st.RotateWebhookSecret(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rotate an unknown tenant: %v", err)
	}
}
