package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"
)

// webhookSecretPrefix starts every webhook secret, so a leaked one is recognisable.
const webhookSecretPrefix = "whsec_"

// RotateWebhookSecret gives the tenant a new webhook secret and returns it:
// the only time it is shown. Deliveries signed from then on use it.
func (s *Store) RotateWebhookSecret(ctx context.Context, tenant string) (secret string, at time.Time, err error) {
	if err := needTenant(tenant); err != nil {
		return "", time.Time{}, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, err
	}
	secret = webhookSecretPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	err = s.pool.QueryRow(ctx, `UPDATE tenants SET webhook_secret = $2, webhook_secret_rotated_at = now() WHERE id = $1
		RETURNING webhook_secret_rotated_at`, tenant, secret).Scan(&at)
	if err != nil {
		return "", time.Time{}, interpretError(err)
	}
	return secret, at, nil
}

// TenantWebhookSecret returns the tenant's webhook secret: for the
// operator's command that creates the tenant (it shows the secret then), and
// for tests. Tenants see it only when it is made (RotateWebhookSecret).
func (s *Store) TenantWebhookSecret(ctx context.Context, tenant string) (string, error) {
	if err := needTenant(tenant); err != nil {
		return "", err
	}
	var secret string
	err := s.pool.QueryRow(ctx, `SELECT webhook_secret FROM tenants WHERE id = $1`, tenant).Scan(&secret)
	return secret, interpretError(err)
}
