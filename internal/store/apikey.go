package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// APIKey is a stored API key, without the key itself.
type APIKey struct {
	ID         string
	Tenant     string
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	Scopes     []domain.Scope
	// MCPMaxBudget caps the budget of a job submitted or raised through
	// MCP with this key; nil: the operator's default (config.API.MCPMaxBudget).
	MCPMaxBudget *int64
	// MCPMaxDailyBudget caps what this key commits through MCP in a UTC day
	// (budgets submitted, increases raised); nil: the operator's default.
	MCPMaxDailyBudget *int64
}

// APIKeyPrefix starts every generated key, so a leaked one is recognisable.
const APIKeyPrefix = "eq_"

// CreateAPIKey generates a key for tenant with scopes (none:
// domain.DefaultKeyScopes) and stores its SHA-256; the tenant is created if
// it is new. The key is returned once and cannot be read back.
func (s *Store) CreateAPIKey(ctx context.Context, tenant, name string, scopes []domain.Scope) (APIKey, string, error) {
	return s.NewAPIKey(ctx, NewAPIKey{Tenant: tenant, Name: name, Scopes: scopes})
}

// NewAPIKey is a key to create: CreateAPIKey's arguments, and the key's
// MCP budget ceiling.
type NewAPIKey struct {
	Tenant       string
	Name         string
	Scopes       []domain.Scope // none: domain.DefaultKeyScopes
	MCPMaxBudget *int64         // >= 0; nil: the operator's default
	// MCPMaxDailyBudget: >= 0; nil: the operator's default.
	MCPMaxDailyBudget *int64
}

// NewAPIKey is CreateAPIKey with every field of a key.
func (s *Store) NewAPIKey(ctx context.Context, nk NewAPIKey) (APIKey, string, error) {
	tenant, name, scopes := strings.TrimSpace(nk.Tenant), nk.Name, nk.Scopes
	if tenant == "" {
		return APIKey{}, "", fmt.Errorf("store: a key needs a tenant: %w", ErrNoTenant)
	}
	if len(scopes) == 0 {
		scopes = domain.DefaultKeyScopes
	}
	for _, sc := range scopes {
		if !sc.Valid() {
			return APIKey{}, "", fmt.Errorf("store: a key's scope %q is not one of read, submit, admin", sc)
		}
	}
	if nk.MCPMaxBudget != nil && *nk.MCPMaxBudget < 0 {
		return APIKey{}, "", fmt.Errorf("store: a key's MCP budget ceiling is %d; it must be >= 0", *nk.MCPMaxBudget)
	}
	if nk.MCPMaxDailyBudget != nil && *nk.MCPMaxDailyBudget < 0 {
		return APIKey{}, "", fmt.Errorf("store: a key's daily MCP budget ceiling is %d; it must be >= 0", *nk.MCPMaxDailyBudget)
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return APIKey{}, "", err
	}
	key := APIKeyPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	sum := sha256.Sum256([]byte(key))
	k := APIKey{Tenant: tenant, Name: name, Prefix: key[:len(APIKeyPrefix)+6], Scopes: scopes, MCPMaxBudget: nk.MCPMaxBudget,
		MCPMaxDailyBudget: nk.MCPMaxDailyBudget}
	// The key's line of the audit log goes in with it (the operator's command makes keys).
	err := s.pool.QueryRow(ctx, `WITH t AS (INSERT INTO tenants (id) VALUES (@tenant) ON CONFLICT (id) DO NOTHING),
		k AS (INSERT INTO api_keys (tenant, name, prefix, key_sha256, scopes, mcp_max_budget, mcp_max_daily_budget)
			VALUES (@tenant, @name, @prefix, @sha, @scopes, @mcp, @mcpdaily)
			RETURNING id, created_at),
		a AS (INSERT INTO audit_log (tenant, key_id, action, subject, rows) SELECT @tenant, @actor, @action, k.id::text, 1 FROM k)
		SELECT id::text, created_at FROM k`,
		pgx.StrictNamedArgs{"tenant": tenant, "name": name, "prefix": k.Prefix, "sha": sum[:], "scopes": scopeStrings(scopes),
			"mcp": nk.MCPMaxBudget, "mcpdaily": nk.MCPMaxDailyBudget, "actor": ActorOperator, "action": AuditKeyCreated}).
		Scan(&k.ID, &k.CreatedAt)
	if err != nil {
		return APIKey{}, "", interpretError(err)
	}
	return k, key, nil
}

func scopeStrings(scopes []domain.Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// LiveAPIKey returns the stored key (not revoked) whose key is key; ok is
// false for an unknown or revoked key. It stamps last_used_at at most once a
// minute. One statement, whatever the key: an unknown one costs one query.
func (s *Store) LiveAPIKey(ctx context.Context, key string) (k APIKey, ok bool, err error) {
	sum := sha256.Sum256([]byte(key))
	rows, err := s.pool.Query(ctx, `WITH k AS (
			SELECT * FROM api_keys WHERE key_sha256 = $1 AND revoked_at IS NULL),
		stamp AS (
			UPDATE api_keys a SET last_used_at = now() FROM k
			WHERE a.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute')
			RETURNING a.id, a.last_used_at)
		SELECT k.id::text, k.tenant, k.name, k.prefix, k.created_at, coalesce(stamp.last_used_at, k.last_used_at), k.revoked_at, k.scopes, k.mcp_max_budget,
			k.mcp_max_daily_budget
		FROM k LEFT JOIN stamp ON stamp.id = k.id`, sum[:])
	if err != nil {
		return APIKey{}, false, interpretError(err)
	}
	k, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[APIKey])
	if errors.Is(err, pgx.ErrNoRows) {
		return APIKey{}, false, nil
	}
	if err != nil {
		return APIKey{}, false, interpretError(err)
	}
	return k, true, nil
}

// APIKeyLive reports whether tenant's key of id is stored and not revoked:
// a web session opened with a key lives no longer than the key. An id
// that is not a stored key's (not a UUID) is not live. One lookup by the
// primary key.
func (s *Store) APIKeyLive(ctx context.Context, tenant, id string) (bool, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return false, nil
	}
	var live bool
	err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE id = $1 AND tenant = $2 AND revoked_at IS NULL)`,
		uid.String(), tenant).Scan(&live)
	return live, interpretError(err)
}

// apiKeyColumns are APIKey's fields, in order.
const apiKeyColumns = `id::text, tenant, name, prefix, created_at, last_used_at, revoked_at, scopes, mcp_max_budget, mcp_max_daily_budget`

// RevokeAPIKey revokes a key by id, and ends the web sessions signed in
// with it; ErrNotFound when there is no live key with that id.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `WITH k AS (UPDATE api_keys SET revoked_at = now() WHERE id::text = $1 AND revoked_at IS NULL RETURNING id, tenant)
			INSERT INTO audit_log (tenant, key_id, action, subject, rows) SELECT k.tenant, $2, $3, k.id::text, 1 FROM k`,
			id, ActorOperator, AuditKeyRevoked)
		if err != nil {
			return interpretError(err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.Exec(ctx, `DELETE FROM web_sessions WHERE key_id = $1`, id)
		return interpretError(err)
	})
}

// ListAPIKeys lists the keys of a tenant, newest first.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE tenant = $1 ORDER BY created_at DESC`, tenant)
	if err != nil {
		return nil, interpretError(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[APIKey])
	return keys, interpretError(err)
}

// AllAPIKeys lists the keys of every tenant, newest first: the operator's
// list (api keys list), never a tenant's.
func (s *Store) AllAPIKeys(ctx context.Context) ([]APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys ORDER BY created_at DESC`)
	if err != nil {
		return nil, interpretError(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[APIKey])
	return keys, interpretError(err)
}

// CountLiveAPIKeys is the number of keys not revoked.
func (s *Store) CountLiveAPIKeys(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE revoked_at IS NULL`).Scan(&n)
	return n, interpretError(err)
}
