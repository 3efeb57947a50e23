package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
}

// APIKeyPrefix starts every generated key, so a leaked one is recognisable.
const APIKeyPrefix = "eq_"

// CreateAPIKey generates a key for tenant and stores its SHA-256. The key is
// returned once and cannot be read back.
func (s *Store) CreateAPIKey(ctx context.Context, tenant, name string) (APIKey, string, error) {
	tenant = strings.TrimSpace(tenant)
	if tenant == "" {
		return APIKey{}, "", errors.New("store: a key needs a tenant")
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return APIKey{}, "", err
	}
	key := APIKeyPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	sum := sha256.Sum256([]byte(key))
	k := APIKey{Tenant: tenant, Name: name, Prefix: key[:len(APIKeyPrefix)+6]}
	err := s.pool.QueryRow(ctx, `INSERT INTO api_keys (tenant, name, prefix, key_sha256) VALUES ($1, $2, $3, $4)
		RETURNING id::text, created_at`, tenant, name, k.Prefix, sum[:]).Scan(&k.ID, &k.CreatedAt)
	if err != nil {
		return APIKey{}, "", interpretError(err)
	}
	return k, key, nil
}

// TenantForKey returns the tenant of a live (not revoked) key.
func (s *Store) TenantForKey(ctx context.Context, key string) (string, bool, error) {
	sum := sha256.Sum256([]byte(key))
	var tenant string
	err := s.pool.QueryRow(ctx, `UPDATE api_keys SET last_used_at = now()
		WHERE key_sha256 = $1 AND revoked_at IS NULL
		  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
		RETURNING tenant`, sum[:]).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		// Used within the minute (not stamped again), or unknown.
		err = s.pool.QueryRow(ctx, `SELECT tenant FROM api_keys WHERE key_sha256 = $1 AND revoked_at IS NULL`, sum[:]).Scan(&tenant)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, interpretError(err)
	}
	return tenant, true, nil
}

// RevokeAPIKey revokes a key by id; ErrNotFound when there is no live key with that id.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id::text = $1 AND revoked_at IS NULL`, id)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// ListAPIKeys lists the keys of a tenant ("" for all), newest first.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text, tenant, name, prefix, created_at, last_used_at, revoked_at FROM api_keys
		WHERE $1 = '' OR tenant = $1 ORDER BY created_at DESC`, tenant)
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
