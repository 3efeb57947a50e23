package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery. The signature is HMAC-SHA256 with the tenant's
// webhook secret over "<timestamp>.<body>", sent as "t=<unix seconds>,v1=<hex>"; a
// receiver recomputes it and rejects old timestamps (replays).
const (
	SignatureHeader = "Enrichq-Signature"
	EventHeader     = "Enrichq-Event"
	DeliveryHeader  = "Enrichq-Delivery"
)

// Sign returns the signature header value of body sent at ts.
func Sign(secret string, ts time.Time, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", ts.Unix(), hex.EncodeToString(mac(secret, ts.Unix(), body)))
}

func mac(secret string, unix int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", unix)
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks a signature header against body: the MAC must
// match and the timestamp be within tolerance of now.
func VerifySignature(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	var ts int64
	var sig []byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts, _ = strconv.ParseInt(v, 10, 64)
		case "v1":
			sig, _ = hex.DecodeString(v)
		}
	}
	if ts == 0 || sig == nil {
		return errors.New("webhook: malformed signature header")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	if !hmac.Equal(sig, mac(secret, ts, body)) {
		return errors.New("webhook: signature mismatch")
	}
	return nil
}
