package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of the upload slots (Deps.UploadsPerTenant, Deps.UploadsTotal).
const (
	DefaultUploadsPerTenant = 4
	DefaultUploadsTotal     = 16
	// uploadRetryAfter is the Retry-After of a refused upload: an upload
	// lasts seconds to minutes.
	uploadRetryAfter = 10 * time.Second
)

// uploadSlots caps the uploads being received at once, per tenant and in
// all. An upload holds a slot while its body arrives and is spooled, and
// while it is parsed and stored: what each costs (a spool on disk up to
// MaxBytes, a parse, a database transaction) is then bounded however slowly
// clients send.
type uploadSlots struct {
	mu        sync.Mutex
	perTenant int
	total     int
	inUse     int
	byTenant  map[string]int
}

func newUploadSlots(perTenant, total int) *uploadSlots {
	if perTenant <= 0 {
		perTenant = DefaultUploadsPerTenant
	}
	if total <= 0 {
		total = DefaultUploadsTotal
	}
	return &uploadSlots{perTenant: perTenant, total: total, byTenant: map[string]int{}}
}

// acquire takes a slot for tenant, or returns the 429 to answer; release
// gives it back (call it once, when the upload is done).
func (u *uploadSlots) acquire(tenant string) (release func(), err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.byTenant[tenant] >= u.perTenant:
		return nil, errTooManyUploads("this tenant already has %d uploads in progress, the most it may; retry when one is done", u.perTenant)
	case u.inUse >= u.total:
		return nil, errTooManyUploads("the server is receiving %d uploads, the most it takes at once; retry shortly", u.total)
	}
	u.inUse++
	u.byTenant[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.inUse--
			if u.byTenant[tenant]--; u.byTenant[tenant] <= 0 {
				delete(u.byTenant, tenant)
			}
		})
	}, nil
}

func errTooManyUploads(format string, args ...any) *apiError {
	e := errorf(http.StatusTooManyRequests, "too_many_uploads", format, args...)
	e.header = http.Header{"Retry-After": {strconv.Itoa(int(uploadRetryAfter / time.Second))}}
	return e
}
