package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/secretbox"
)

// Platform is the platform's own API: connect flow, member sync, token
// refresh. Off unless its URL or client id is set; then every field but
// ExpiryWindow is required.
type Platform struct {
	// URL and Version: the platform's base URL and its YYYYMM API version
	// (ENRICHQ_PLATFORM_URL, ENRICHQ_PLATFORM_VERSION). The version is checked
	// as six digits YYYYMM at start, before any call.
	URL     string
	Version string
	// AuthURL and TokenURL: the OAuth 2.0 consent screen and token endpoint
	// (ENRICHQ_PLATFORM_AUTH_URL, ENRICHQ_PLATFORM_TOKEN_URL).
	AuthURL  string
	TokenURL string
	// ClientID and ClientSecret: the app registered at the platform
	// (ENRICHQ_PLATFORM_CLIENT_ID, ENRICHQ_PLATFORM_CLIENT_SECRET). The secret
	// is never logged.
	ClientID     string
	ClientSecret string
	// RedirectURL is enrichq's callback as registered at the platform, ending
	// in /v1/platform/callback (ENRICHQ_PLATFORM_REDIRECT_URL).
	RedirectURL string
	// TokenKey encrypts member tokens at rest (AES-256-GCM): 32 bytes in
	// base64 or hex, several comma-separated to rotate (the first seals)
	// (ENRICHQ_PLATFORM_TOKEN_KEY). A secret: never logged or quoted. Member
	// tokens are never stored in the clear: without it nothing starts.
	TokenKey string
	// ExpiryWindow: members whose token expires within it are reported and
	// refreshed (ENRICHQ_PLATFORM_EXPIRY_WINDOW, "14d" or "36h"; default 0:
	// jobs.DefaultExpiryWindow, 7 days).
	ExpiryWindow time.Duration
}

func (p *Platform) read(r *reader) {
	r.url("ENRICHQ_PLATFORM_URL", &p.URL)
	r.str("ENRICHQ_PLATFORM_VERSION", &p.Version)
	r.str("ENRICHQ_PLATFORM_AUTH_URL", &p.AuthURL)
	r.str("ENRICHQ_PLATFORM_TOKEN_URL", &p.TokenURL)
	r.str("ENRICHQ_PLATFORM_CLIENT_ID", &p.ClientID)
	r.str("ENRICHQ_PLATFORM_CLIENT_SECRET", &p.ClientSecret)
	r.str("ENRICHQ_PLATFORM_REDIRECT_URL", &p.RedirectURL)
	r.str("ENRICHQ_PLATFORM_TOKEN_KEY", &p.TokenKey)
	r.days("ENRICHQ_PLATFORM_EXPIRY_WINDOW", &p.ExpiryWindow)
}

// Enabled reports whether the platform's API is configured (its URL or its
// app's client id is set). Then Require must pass.
func (p Platform) Enabled() bool { return p.URL != "" || p.ClientID != "" }

// Require checks that every platform variable is set, naming each missing one.
func (p Platform) Require() error {
	var missing []string
	for _, v := range []struct{ name, value string }{
		{"ENRICHQ_PLATFORM_URL", p.URL},
		{"ENRICHQ_PLATFORM_VERSION", p.Version},
		{"ENRICHQ_PLATFORM_AUTH_URL", p.AuthURL},
		{"ENRICHQ_PLATFORM_TOKEN_URL", p.TokenURL},
		{"ENRICHQ_PLATFORM_CLIENT_ID", p.ClientID},
		{"ENRICHQ_PLATFORM_CLIENT_SECRET", p.ClientSecret},
		{"ENRICHQ_PLATFORM_REDIRECT_URL", p.RedirectURL},
		{"ENRICHQ_PLATFORM_TOKEN_KEY", p.TokenKey},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	verb := "are"
	if len(missing) == 1 {
		verb = "is"
	}
	return fmt.Errorf("the platform's API is configured but %s %s not set (ENRICHQ_PLATFORM_TOKEN_KEY: 32 bytes in base64, e.g. openssl rand -base64 32)",
		strings.Join(missing, ", "), verb)
}

// validate checks the values that are set, and, when the platform is
// enabled, that none is missing.
func (p Platform) validate() error {
	var errs []error
	if p.Enabled() {
		errs = append(errs, p.Require())
	}
	if p.TokenKey != "" {
		if _, err := secretbox.ParseKeys(p.TokenKey); err != nil {
			errs = append(errs, fmt.Errorf("ENRICHQ_PLATFORM_TOKEN_KEY: %w", err)) // never the key itself
		}
	}
	if p.Version != "" {
		if err := validPlatformVersion(p.Version); err != "" {
			errs = append(errs, fmt.Errorf("ENRICHQ_PLATFORM_VERSION=%q: %s", p.Version, err))
		}
	}
	if p.ExpiryWindow < 0 {
		errs = append(errs, errors.New("ENRICHQ_PLATFORM_EXPIRY_WINDOW: want a positive duration"))
	}
	return errors.Join(errs...)
}

// validPlatformVersion checks YYYYMM: six digits, a month from 01 to 12.
func validPlatformVersion(v string) string {
	if len(v) != 6 || strings.Trim(v, "0123456789") != "" {
		return "want six digits YYYYMM, e.g. 202611"
	}
	if m, _ := strconv.Atoi(v[4:]); m < 1 || m > 12 {
		return "want YYYYMM with a month from 01 to 12"
	}
	return ""
}
