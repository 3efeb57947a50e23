package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// Vendor is the enrichment vendor as the worker calls it.
type Vendor struct {
	// URL is the vendor's base URL, without /v1 (ENRICHQ_VENDOR_URL; required
	// by the worker).
	URL string
	// Key is the vendor API key (ENRICHQ_VENDOR_KEY; required by the worker).
	// A secret: never logged, stored only as its Account.
	Key string
	// RPS is the vendor's rate limit for this key, requests per second, shared
	// by every worker (ENRICHQ_VENDOR_RPS, default 10, 0.01 to 100000).
	RPS float64
	// Burst is the burst the limiter allows (ENRICHQ_VENDOR_BURST, default 1,
	// 1 to 100000).
	Burst int
	// Bulk uses POST /v1/bulk when true (ENRICHQ_VENDOR_BULK, default true).
	Bulk bool
	// HonoursKeys: whether the vendor honours Idempotency-Key, so that a
	// fresh answer to a retry proves the earlier sends of its key were not
	// billed (ENRICHQ_VENDOR_HONOURS_KEYS: auto, learned from the first
	// replay seen; true; false).
	HonoursKeys domain.HonoursKeys
	// AllowHTTP takes an http URL on any host (ENRICHQ_VENDOR_ALLOW_HTTP,
	// default false): only for a fake vendor on a private network, such as
	// docker-compose's. Without it the URL must be https, or http on a
	// loopback address: over http anyone in the middle reads the key and
	// writes the charge headers.
	AllowHTTP bool
	// Timeout bounds one vendor call (ENRICHQ_VENDOR_TIMEOUT, default 30s).
	Timeout time.Duration
	// MonthlyCredits caps the credits of the key per calendar month (UTC),
	// across every job and worker (ENRICHQ_VENDOR_MONTHLY_CREDITS, default 0:
	// no cap; usage is tracked either way).
	MonthlyCredits int64
}

func defaultVendor() Vendor {
	return Vendor{RPS: DefaultVendorRPS, Burst: DefaultVendorBurst, Bulk: true, Timeout: DefaultVendorTimeout, HonoursKeys: domain.HonoursKeysAuto}
}

func (v *Vendor) read(r *reader) {
	r.url("ENRICHQ_VENDOR_URL", &v.URL)
	r.str("ENRICHQ_VENDOR_KEY", &v.Key)
	r.float("ENRICHQ_VENDOR_RPS", &v.RPS)
	r.int("ENRICHQ_VENDOR_BURST", &v.Burst)
	r.bool("ENRICHQ_VENDOR_BULK", &v.Bulk)
	r.bool("ENRICHQ_VENDOR_ALLOW_HTTP", &v.AllowHTTP)
	var hk string
	r.str("ENRICHQ_VENDOR_HONOURS_KEYS", &hk)
	if hk != "" {
		if h := domain.HonoursKeys(strings.ToLower(strings.TrimSpace(hk))); h.Valid() {
			v.HonoursKeys = h
		} else {
			r.fail("ENRICHQ_VENDOR_HONOURS_KEYS", hk, "auto, true or false")
		}
	}
	r.duration("ENRICHQ_VENDOR_TIMEOUT", &v.Timeout)
	r.int64("ENRICHQ_VENDOR_MONTHLY_CREDITS", &v.MonthlyCredits)
}

func (v Vendor) validate() error {
	errs := []error{
		inRange("ENRICHQ_VENDOR_RPS", v.RPS, 0.01, 100000),
		inRange("ENRICHQ_VENDOR_BURST", v.Burst, 1, 100000),
		inRange("ENRICHQ_VENDOR_MONTHLY_CREDITS", v.MonthlyCredits, 0, 1<<50),
	}
	if v.URL == "" || v.Key == "" {
		errs = append(errs, errors.New("ENRICHQ_VENDOR_URL and ENRICHQ_VENDOR_KEY are required"))
	} else if msg := checkVendorURL(v.URL, v.AllowHTTP); msg != "" {
		errs = append(errs, errors.New("ENRICHQ_VENDOR_URL "+msg+" (ENRICHQ_VENDOR_ALLOW_HTTP=true takes http for a fake on a private network)"))
	}
	return errors.Join(errs...)
}

// Account is the key's id in the ledger and account_usage.
func (v Vendor) Account() string { return VendorAccount(v.Key) }

// Allowance is MonthlyCredits as the money path takes it: nil for no cap.
func (v Vendor) Allowance() *int64 {
	if v.MonthlyCredits <= 0 {
		return nil
	}
	n := v.MonthlyCredits
	return &n
}

// VendorAccount is a vendor key's id in the ledger and account_usage: the
// first 12 hex digits of its SHA-256, so the key itself is never stored.
// "" for no key.
func VendorAccount(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:12]
}
