package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"slices"
	"strconv"
)

// ErrIdempotencyKeyReused: an idempotency key the tenant used before, on
// the same kind of request, sent with another request (another body or
// other options). Nothing is stored; the first job stays the key's.
var ErrIdempotencyKeyReused = errors.New("idempotency key used before with another request")

// The kinds of request an idempotency key belongs to (jobs.idempotency_scope):
// a key is the tenant's within one kind only.
const (
	scopeJobs         = "jobs"          // POST /v1/jobs, MCP submit_job, the web page's submit
	scopePlatformSync = "platform_sync" // POST /v1/platform/sync
)

// requestDigest is the SHA-256 of a request, kept beside its idempotency
// key: each field is written with its length, so no two requests share a
// stream of bytes.
type requestDigest struct{ h hash.Hash }

func newRequestDigest(kind string) *requestDigest {
	d := &requestDigest{h: sha256.New()}
	d.field(kind)
	return d
}

func (d *requestDigest) field(s string) {
	var n [20]byte
	d.h.Write(strconv.AppendInt(n[:0], int64(len(s)), 10))
	d.h.Write([]byte{':'})
	d.h.Write([]byte(s))
}

// row writes a job's row as the request gave it (a suppression's blanking
// comes after).
func (d *requestDigest) row(r NewRow) {
	d.field(strconv.Itoa(r.InputRow))
	for _, f := range []string{r.Ref, string(r.Kind), r.ProfileURL, r.Name, r.Company, r.Domain, r.Email, r.Role} {
		d.field(f)
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d.field(strconv.Itoa(len(keys)))
	for _, k := range keys {
		d.field(k)
		d.field(r.Extra[k])
	}
}

func (d *requestDigest) sum() []byte { return d.h.Sum(nil) }

// sameRequest is nil when a key's stored digest matches the request's, or
// when none was stored (a job made before digests were kept).
func sameRequest(stored, sent []byte) error {
	if stored == nil || bytes.Equal(stored, sent) {
		return nil
	}
	return ErrIdempotencyKeyReused
}
