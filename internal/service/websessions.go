package service

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// SessionLifetime bounds a web session: it ends Idle after its last use,
// and Max after it began, whichever comes first.
type SessionLifetime struct {
	Max  time.Duration
	Idle time.Duration
}

// WebSession is a signed-in person of the web page: the principal of the
// key they signed in with, the CSRF token of their forms, and when the
// session ends at the latest.
type WebSession struct {
	Principal Principal
	CSRFToken string
	ExpiresAt time.Time
}

// StartWebSession opens a session for p (who has just shown their key) and
// returns its token, the cookie's value: 32 random bytes, of which only the
// digest is stored.
func (s *Service) StartWebSession(ctx context.Context, p Principal, life SessionLifetime) (token string, ws WebSession, err error) {
	if p.Tenant == "" {
		return "", WebSession{}, ErrNoTenant
	}
	token, csrf := randomToken(), randomToken()
	now := s.now().Truncate(time.Microsecond) // as Postgres keeps it
	st := store.WebSession{Tenant: p.Tenant, KeyID: p.KeyID, Scopes: p.Scopes, CSRFToken: csrf,
		CreatedAt: now, IdleUntil: now.Add(min(life.Idle, life.Max)), ExpiresAt: now.Add(life.Max)}
	if err := s.store.CreateWebSession(ctx, token, st); err != nil {
		return "", WebSession{}, err
	}
	return token, WebSession{Principal: p, CSRFToken: csrf, ExpiresAt: st.ExpiresAt}, nil
}

// ResumeWebSession returns the live session of token and keeps it alive for
// another life.Idle; ErrNotFound when there is none (never was, ended, or
// signed out).
func (s *Service) ResumeWebSession(ctx context.Context, token string, life SessionLifetime) (WebSession, error) {
	if token == "" {
		return WebSession{}, ErrNotFound
	}
	st, err := s.store.TouchWebSession(ctx, token, s.now(), life.Idle)
	if err != nil {
		return WebSession{}, err
	}
	return WebSession{Principal: Principal{Tenant: st.Tenant, KeyID: st.KeyID, Scopes: st.Scopes},
		CSRFToken: st.CSRFToken, ExpiresAt: st.ExpiresAt}, nil
}

// EndWebSession signs the session of token out; ending one that is gone
// is no error.
func (s *Service) EndWebSession(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	err := s.store.DeleteWebSession(ctx, token)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// randomToken is 32 random bytes, base64url: a session or CSRF token.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
