package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A web session lives until its idle end, which each use moves on (never
// past its absolute end); it ends when deleted, and when its key is revoked.
func TestWebSessions(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	k, _, err := st.CreateAPIKey(ctx, "acme", "web", []domain.Scope{domain.ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	open := func(token string) {
		t.Helper()
		err := st.CreateWebSession(ctx, token, store.WebSession{Tenant: "acme", KeyID: k.ID, Scopes: k.Scopes, CSRFToken: "csrf-" + token,
			CreatedAt: t0, IdleUntil: t0.Add(time.Hour), ExpiresAt: t0.Add(8 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
	}
	open("token-1")

	ws, err := st.TouchWebSession(ctx, "token-1", t0.Add(50*time.Minute), time.Hour)
	if err != nil || ws.Tenant != "acme" || ws.KeyID != k.ID || !slices.Equal(ws.Scopes, k.Scopes) || ws.CSRFToken != "csrf-token-1" ||
		!ws.IdleUntil.Equal(t0.Add(110*time.Minute)) {
		t.Fatalf("touch within the hour: %+v, %v", ws, err)
	}
	// A page polled within the minute does not write the row again.
	if ws, err := st.TouchWebSession(ctx, "token-1", t0.Add(50*time.Minute+30*time.Second), time.Hour); err != nil || !ws.IdleUntil.Equal(t0.Add(110*time.Minute)) {
		t.Fatalf("touch within the minute: idle until %s, %v", ws.IdleUntil, err)
	}
	if _, err := st.TouchWebSession(ctx, "token-2", t0, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown token: %v", err)
	}
	// Idle past its end: gone.
	if _, err := st.TouchWebSession(ctx, "token-1", t0.Add(111*time.Minute), time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("idle for over an hour: %v", err)
	}

	// Used every half hour, it still ends 8 h after it began.
	open("token-3")
	for at := t0.Add(30 * time.Minute); at.Before(t0.Add(8 * time.Hour)); at = at.Add(30 * time.Minute) {
		ws, err := st.TouchWebSession(ctx, "token-3", at, time.Hour)
		if err != nil || ws.IdleUntil.After(ws.ExpiresAt) {
			t.Fatalf("at %s: %+v, %v", at, ws, err)
		}
	}
	if _, err := st.TouchWebSession(ctx, "token-3", t0.Add(8*time.Hour), time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after 8 h: %v", err)
	}

	// Sign out deletes it.
	open("token-4")
	if err := st.DeleteWebSession(ctx, "token-4"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TouchWebSession(ctx, "token-4", t0, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("signed out: %v", err)
	}

	// Revoking the key ends its sessions.
	open("token-5")
	if err := st.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TouchWebSession(ctx, "token-5", t0, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the key revoked: %v", err)
	}

	// No tenant, no session.
	if err := st.CreateWebSession(ctx, "token-6", store.WebSession{CSRFToken: "c", CreatedAt: t0, IdleUntil: t0, ExpiresAt: t0}); !errors.Is(err, store.ErrNoTenant) {
		t.Fatalf("a session of no tenant: %v", err)
	}
}
