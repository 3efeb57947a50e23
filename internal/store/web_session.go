package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// WebSession is a signed-in person of the web page: whose key it was
// opened with, what that key may do, and until when it lasts. The session
// token itself is never stored, only its SHA-256.
type WebSession struct {
	Tenant    string
	KeyID     string
	Scopes    []domain.Scope
	CSRFToken string
	CreatedAt time.Time
	// IdleUntil is when the session ends unless used; each use moves it.
	IdleUntil time.Time
	// ExpiresAt is when the session ends, however much it is used.
	ExpiresAt time.Time
}

// CreateWebSession stores a session under the digest of token, and drops
// the sessions that have ended (theirs is the cheapest moment to go).
func (s *Store) CreateWebSession(ctx context.Context, token string, ws WebSession) error {
	if err := needTenant(ws.Tenant); err != nil {
		return err
	}
	if ws.CSRFToken == "" || token == "" {
		return errors.New("store: a web session needs a token and a CSRF token")
	}
	sum := sha256.Sum256([]byte(token))
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM web_sessions WHERE expires_at <= $1 OR idle_until <= $1`, ws.CreatedAt); err != nil {
			return interpretError(err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO web_sessions (token_sha256, tenant, key_id, scopes, csrf_token, created_at, idle_until, expires_at)
			VALUES (@sha, @tenant, @key_id, @scopes, @csrf, @created, @idle, @expires)`,
			pgx.StrictNamedArgs{"sha": sum[:], "tenant": ws.Tenant, "key_id": ws.KeyID, "scopes": scopeStrings(ws.Scopes),
				"csrf": ws.CSRFToken, "created": ws.CreatedAt, "idle": ws.IdleUntil, "expires": ws.ExpiresAt})
		return interpretError(err)
	})
}

// TouchWebSession returns the live session of token and moves its idle end
// to now+idle (never past its absolute end); ErrNotFound when there is no
// such session or it has ended. The row is written at most once a minute,
// however often a page polls.
func (s *Store) TouchWebSession(ctx context.Context, token string, now time.Time, idle time.Duration) (WebSession, error) {
	sum := sha256.Sum256([]byte(token))
	ws, err := scanWebSession(s.pool.QueryRow(ctx, `SELECT `+webSessionColumns+` FROM web_sessions
		WHERE token_sha256 = @sha AND expires_at > @now AND idle_until > @now`, pgx.StrictNamedArgs{"sha": sum[:], "now": now}))
	if err != nil {
		return WebSession{}, err
	}
	stale := now.Add(idle - time.Minute) // moved within the minute: leave the row be
	if ws.ExpiresAt.Before(stale) {
		stale = ws.ExpiresAt
	}
	if !ws.IdleUntil.Before(stale) {
		return ws, nil
	}
	return scanWebSession(s.pool.QueryRow(ctx, `UPDATE web_sessions SET idle_until = least(expires_at, @next)
		WHERE token_sha256 = @sha AND expires_at > @now AND idle_until > @now
		RETURNING `+webSessionColumns, pgx.StrictNamedArgs{"sha": sum[:], "now": now, "next": now.Add(idle)}))
}

// webSessionColumns are WebSession's fields, in scanWebSession's order.
const webSessionColumns = `tenant, key_id, scopes, csrf_token, created_at, idle_until, expires_at`

func scanWebSession(row pgx.Row) (WebSession, error) {
	var (
		ws     WebSession
		scopes []string
	)
	if err := row.Scan(&ws.Tenant, &ws.KeyID, &scopes, &ws.CSRFToken, &ws.CreatedAt, &ws.IdleUntil, &ws.ExpiresAt); err != nil {
		return WebSession{}, interpretError(err)
	}
	for _, sc := range scopes {
		ws.Scopes = append(ws.Scopes, domain.Scope(sc))
	}
	return ws, nil
}

// DeleteWebSession ends the session of token; no error when there is none.
func (s *Store) DeleteWebSession(ctx context.Context, token string) error {
	sum := sha256.Sum256([]byte(token))
	_, err := s.pool.Exec(ctx, `DELETE FROM web_sessions WHERE token_sha256 = $1`, sum[:])
	return interpretError(err)
}
