package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Member statuses.
const (
	MemberActive      = "active"
	MemberNeedsReauth = "needs_reauth"
)

// SourcePlatform is profile_results.source for profiles read from the platform.
const SourcePlatform = "platform"

// PlatformToken is a member's OAuth token as stored: sealed (encrypted by the
// caller), with what the scheduler needs to know of its life in the clear.
type PlatformToken struct {
	Sealed           []byte
	IssuedAt         time.Time
	ExpiresAt        *time.Time // nil: no lifetime given
	Refreshable      bool
	RefreshExpiresAt *time.Time
	Scopes           []string
}

// PlatformMember is a member who connected their platform account to a tenant.
type PlatformMember struct {
	ID           string // enrichq's id (uuid)
	Tenant       string
	MemberID     string // the platform's id
	Name         string
	Email        string
	Headline     string
	Status       string
	StatusReason string
	Token        PlatformToken
	Profile      []byte // the last /rest/me answer
	ConnectedAt  time.Time
	RefreshedAt  *time.Time
	LastSyncedAt *time.Time
	UpdatedAt    time.Time
}

// ConnectionEndsAt is when the member's connection stops working unless they
// reconnect: the refresh token's expiry when one is held (nil when unknown),
// else the access token's.
func (m PlatformMember) ConnectionEndsAt() *time.Time {
	if m.Token.Refreshable {
		return m.Token.RefreshExpiresAt
	}
	return m.Token.ExpiresAt
}

// memberCols is the column list scanMember reads, of table alias a ("" or "m.").
func memberCols(a string) string {
	return fmt.Sprintf(`%[1]sid::text, %[1]stenant, %[1]smember_id, %[1]sname, %[1]semail, %[1]sheadline, %[1]sstatus,
	%[1]sstatus_reason, %[1]stoken, %[1]stoken_issued_at, %[1]stoken_expires_at, %[1]srefreshable, %[1]srefresh_expires_at,
	%[1]sscopes, coalesce(%[1]sprofile::text, ''), %[1]sconnected_at, %[1]srefreshed_at, %[1]slast_synced_at, %[1]supdated_at`, a)
}

var memberColumns = memberCols("")

func scanMember(row pgx.Row) (PlatformMember, error) {
	var m PlatformMember
	var profile string
	err := row.Scan(&m.ID, &m.Tenant, &m.MemberID, &m.Name, &m.Email, &m.Headline, &m.Status, &m.StatusReason, &m.Token.Sealed,
		&m.Token.IssuedAt, &m.Token.ExpiresAt, &m.Token.Refreshable, &m.Token.RefreshExpiresAt, &m.Token.Scopes, &profile,
		&m.ConnectedAt, &m.RefreshedAt, &m.LastSyncedAt, &m.UpdatedAt)
	if err != nil {
		return PlatformMember{}, interpretError(err)
	}
	if profile != "" {
		m.Profile = []byte(profile)
	}
	return m, nil
}

func collectMembers(rows pgx.Rows, err error) ([]PlatformMember, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []PlatformMember
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, interpretError(rows.Err())
}

// ConnectedMember is what a completed connect flow stores.
type ConnectedMember struct {
	Tenant   string
	MemberID string
	Name     string
	Email    string
	Headline string
	Profile  []byte
	Token    PlatformToken
	At       time.Time
}

// UpsertPlatformMember stores a member who connected (or reconnected: the
// token is replaced and the member is active again).
func (s *Store) UpsertPlatformMember(ctx context.Context, c ConnectedMember) (PlatformMember, error) {
	if err := needTenant(c.Tenant); err != nil {
		return PlatformMember{}, err
	}
	scopes := c.Token.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return scanMember(s.pool.QueryRow(ctx, `
		INSERT INTO platform_members (tenant, member_id, name, email, headline, token, token_issued_at, token_expires_at,
			refreshable, refresh_expires_at, scopes, profile, connected_at, last_synced_at)
		VALUES (@tenant, @member_id, @name, @email, @headline, @token, @issued_at, @expires_at, @refreshable, @refresh_expires_at,
			@scopes, @profile, @at, @at)
		ON CONFLICT (tenant, member_id) DO UPDATE SET
			name = excluded.name, email = excluded.email, headline = excluded.headline,
			status = 'active', status_reason = '', token = excluded.token, token_issued_at = excluded.token_issued_at,
			token_expires_at = excluded.token_expires_at, refreshable = excluded.refreshable,
			refresh_expires_at = excluded.refresh_expires_at, scopes = excluded.scopes, profile = excluded.profile,
			connected_at = excluded.connected_at, last_synced_at = excluded.last_synced_at, expiry_warned_at = NULL,
			updated_at = now()
		RETURNING `+memberColumns,
		pgx.StrictNamedArgs{"tenant": c.Tenant, "member_id": c.MemberID, "name": c.Name, "email": c.Email, "headline": c.Headline,
			"token": c.Token.Sealed, "issued_at": c.Token.IssuedAt, "expires_at": c.Token.ExpiresAt, "refreshable": c.Token.Refreshable,
			"refresh_expires_at": c.Token.RefreshExpiresAt, "scopes": scopes, "profile": jsonOrNull(c.Profile), "at": c.At}))
}

// GetPlatformMember returns a member of tenant by enrichq's id; another
// tenant's is ErrNotFound, and an empty tenant ErrNoTenant.
func (s *Store) GetPlatformMember(ctx context.Context, tenant, id string) (PlatformMember, error) {
	if err := needTenant(tenant); err != nil {
		return PlatformMember{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return PlatformMember{}, ErrNotFound
	}
	return scanMember(s.pool.QueryRow(ctx, `SELECT `+memberColumns+` FROM platform_members WHERE id = $1 AND tenant = $2`, id, tenant))
}

// MemberFilter selects members to list.
type MemberFilter struct {
	// EndingBefore keeps members whose connection ends (see
	// PlatformMember.ConnectionEndsAt) before this time, and members who
	// already need to reconnect. Nil: every member.
	EndingBefore *time.Time
	// Status keeps members in this status; "" any.
	Status string
	// After is the id of the last member of the previous page ("" from the start).
	After string
	Limit int
}

// ListPlatformMembers lists a tenant's members in the order they connected.
func (s *Store) ListPlatformMembers(ctx context.Context, tenant string, f MemberFilter) ([]PlatformMember, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	var after *string
	if f.After != "" {
		if _, err := uuid.Parse(f.After); err != nil {
			return nil, fmt.Errorf("store: bad cursor id")
		}
		after = &f.After
	}
	return collectMembers(s.pool.Query(ctx, `SELECT `+memberColumns+` FROM platform_members m
		WHERE tenant = $1 AND ($2 = '' OR status = $2)
		  AND ($3::timestamptz IS NULL OR status = 'needs_reauth'
		       OR (CASE WHEN refreshable THEN refresh_expires_at ELSE token_expires_at END) <= $3)
		  AND ($4::uuid IS NULL OR (connected_at, id) > (SELECT connected_at, id FROM platform_members WHERE id = $4))
		ORDER BY connected_at, id LIMIT $5`, tenant, f.Status, f.EndingBefore, after, f.Limit))
}
