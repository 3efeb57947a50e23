package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// MemberUpdate is what a token refresh decided (FinishMemberRefresh).
type MemberUpdate struct {
	// Token, when set, replaces the member's token (a refresh).
	Token *PlatformToken
	// NeedsReauth, when set, marks the member needs_reauth with this reason.
	NeedsReauth string
}

// ClaimMemberRefresh takes, for lease, the right to refresh the member's
// token, and returns the member as stored. claim is "" when another
// refresher holds a live claim (or the member is not active): wait for its
// token rather than spend the refresh token twice. The claim is one
// statement: no transaction stays open while the platform is called.
func (s *Store) ClaimMemberRefresh(ctx context.Context, id string, lease time.Duration) (m PlatformMember, claim string, err error) {
	token := uuid.NewString()
	var won bool
	row := s.pool.QueryRow(ctx, `UPDATE platform_members SET
			refresh_claim = CASE WHEN `+claimFree+` THEN $2::uuid ELSE refresh_claim END,
			refresh_claim_until = CASE WHEN `+claimFree+` THEN now() + $3 * interval '1 millisecond' ELSE refresh_claim_until END
		WHERE id = $1
		RETURNING `+memberColumns+`, coalesce(refresh_claim = $2::uuid, false)`, id, token, lease.Milliseconds())
	m, err = scanMember(extraScan{row, &won})
	if err != nil || !won {
		return m, "", err
	}
	return m, token, nil
}

// claimFree: the member's token may be claimed for a refresh.
const claimFree = `status = 'active' AND (refresh_claim IS NULL OR refresh_claim_until < now())`

// extraScan scans a row of memberColumns followed by more columns.
type extraScan struct {
	row   pgx.Row
	extra *bool
}

func (e extraScan) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra)...) }

// FinishMemberRefresh applies what the refresh under claim decided and
// gives the claim up, in one short transaction, and returns the member as
// stored afterwards. A claim that lapsed and was taken by another refresher
// is ErrConflict: nothing is applied.
func (s *Store) FinishMemberRefresh(ctx context.Context, id, claim string, u MemberUpdate) (PlatformMember, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return PlatformMember{}, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	m, err := scanMember(tx.QueryRow(ctx, `SELECT `+memberColumns+` FROM platform_members WHERE id = $1 AND refresh_claim = $2::uuid FOR UPDATE`, id, claim))
	if errors.Is(err, ErrNotFound) {
		return PlatformMember{}, fmt.Errorf("%w: the refresh claim of member %s lapsed", ErrConflict, id)
	}
	if err != nil {
		return PlatformMember{}, err
	}
	if t := u.Token; t != nil {
		scopes := t.Scopes
		if scopes == nil {
			scopes = m.Token.Scopes
		}
		if _, err := tx.Exec(ctx, `UPDATE platform_members SET token = @token, token_issued_at = @issued_at, token_expires_at = @expires_at,
				refreshable = @refreshable, refresh_expires_at = @refresh_expires_at, scopes = @scopes, refreshed_at = @issued_at,
				expiry_warned_at = NULL, updated_at = now()
			WHERE id = @id`, pgx.StrictNamedArgs{"id": id, "token": t.Sealed, "issued_at": t.IssuedAt, "expires_at": t.ExpiresAt,
			"refreshable": t.Refreshable, "refresh_expires_at": t.RefreshExpiresAt, "scopes": scopes}); err != nil {
			return m, interpretError(err)
		}
	}
	if u.NeedsReauth != "" {
		if _, err := tx.Exec(ctx, `UPDATE platform_members SET status = 'needs_reauth', status_reason = $2, updated_at = now()
			WHERE id = $1`, id, u.NeedsReauth); err != nil {
			return m, interpretError(err)
		}
	}
	m, err = scanMember(tx.QueryRow(ctx, `UPDATE platform_members SET refresh_claim = NULL, refresh_claim_until = NULL
		WHERE id = $1 RETURNING `+memberColumns, id))
	if err != nil {
		return PlatformMember{}, err
	}
	return m, interpretError(tx.Commit(ctx))
}

// MarkMemberNeedsReauth marks an active member needs_reauth with a reason;
// it reports whether this call changed the member.
func (s *Store) MarkMemberNeedsReauth(ctx context.Context, id, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE platform_members SET status = 'needs_reauth', status_reason = $2, updated_at = now()
		WHERE id = $1 AND status = 'active'`, id, reason)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// MembersToRefresh returns active members holding a refresh token (not known
// to be expired at now) whose access token is due for renewal: it expires
// within window, or within half its life when that is shorter (so a
// short-lived token is not refreshed at every sweep).
func (s *Store) MembersToRefresh(ctx context.Context, now time.Time, window time.Duration, limit int) ([]PlatformMember, error) {
	return collectMembers(s.pool.Query(ctx, `SELECT `+memberColumns+` FROM platform_members
		WHERE status = 'active' AND refreshable AND (refresh_expires_at IS NULL OR refresh_expires_at > $1)
		  AND token_expires_at IS NOT NULL
		  AND token_expires_at - least($2::bigint * interval '1 millisecond', (token_expires_at - token_issued_at) / 2) <= $1::timestamptz
		ORDER BY token_expires_at LIMIT $3`, now, window.Milliseconds(), limit))
}

// ExpireMembers marks needs_reauth the active members whose connection ended
// before now (access token expired, and no refresh token that still works)
// and returns them.
func (s *Store) ExpireMembers(ctx context.Context, now time.Time, limit int) ([]PlatformMember, error) {
	return collectMembers(s.pool.Query(ctx, `
		UPDATE platform_members m SET status = 'needs_reauth',
			status_reason = 'token expired at ' || to_char(m.token_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
				|| CASE WHEN m.refreshable THEN ' and its refresh token at ' ||
					to_char(m.refresh_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ELSE ' (no refresh token)' END
				|| '; the member must reconnect',
			updated_at = now()
		FROM (SELECT id FROM platform_members WHERE status = 'active' AND token_expires_at <= $1
		        AND (NOT refreshable OR refresh_expires_at <= $1)
		      ORDER BY token_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) x
		WHERE m.id = x.id
		RETURNING `+memberCols("m."), now, limit))
}

// MembersToWarn returns active members whose connection ends within window
// of now and who were not warned within rewarn, and stamps them warned.
func (s *Store) MembersToWarn(ctx context.Context, now time.Time, window, rewarn time.Duration, limit int) ([]PlatformMember, error) {
	return collectMembers(s.pool.Query(ctx, `
		UPDATE platform_members m SET expiry_warned_at = $1::timestamptz
		FROM (SELECT id FROM platform_members
		      WHERE status = 'active'
		        AND (CASE WHEN refreshable THEN refresh_expires_at ELSE token_expires_at END) <= $1::timestamptz + $2::bigint * interval '1 millisecond'
		        AND (expiry_warned_at IS NULL OR expiry_warned_at <= $1::timestamptz - $3::bigint * interval '1 millisecond')
		      ORDER BY token_expires_at LIMIT $4 FOR UPDATE SKIP LOCKED) x
		WHERE m.id = x.id
		RETURNING `+memberCols("m."), now, window.Milliseconds(), rewarn.Milliseconds(), limit))
}
