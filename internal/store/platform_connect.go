package store

import (
	"context"
	"time"
)

// SaveConnectState records a connect request: the state's hash, its tenant
// and its sealed PKCE verifier, valid until expiresAt.
func (s *Store) SaveConnectState(ctx context.Context, stateHash []byte, tenant string, sealedVerifier []byte, now, expiresAt time.Time) error {
	if err := needTenant(tenant); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO platform_connect_states (state_hash, tenant, verifier, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, stateHash, tenant, sealedVerifier, now, expiresAt)
	return interpretError(err)
}

// TakeConnectState consumes a connect request: it is deleted whatever
// happens next, so a state works once. An unknown or expired state is
// ErrNotFound.
func (s *Store) TakeConnectState(ctx context.Context, stateHash []byte, now time.Time) (tenant string, sealedVerifier []byte, err error) {
	var expires time.Time
	err = s.pool.QueryRow(ctx, `DELETE FROM platform_connect_states WHERE state_hash = $1 RETURNING tenant, verifier, expires_at`,
		stateHash).Scan(&tenant, &sealedVerifier, &expires)
	if err != nil {
		return "", nil, interpretError(err)
	}
	if !now.Before(expires) {
		return "", nil, ErrNotFound
	}
	return tenant, sealedVerifier, nil
}

// DeleteExpiredConnectStates removes connect requests that expired before now.
func (s *Store) DeleteExpiredConnectStates(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM platform_connect_states WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}
