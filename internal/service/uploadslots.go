package service

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Defaults of the upload slots (Config.UploadsPerTenant, Config.UploadsTotal).
const (
	DefaultUploadsPerTenant = 4
	DefaultUploadsTotal     = 16
	// UploadRetryAfter is when to try again past the slots: an upload
	// lasts seconds to minutes.
	UploadRetryAfter = 10 * time.Second
)

// TooManyUploadsError: every upload slot of the tenant, or of the server,
// is taken; nothing was done. Each door says it its way (REST: 429 with
// Retry-After).
type TooManyUploadsError struct {
	Message    string
	RetryAfter time.Duration
}

func (e *TooManyUploadsError) Error() string { return "too_many_uploads: " + e.Message }

// uploadSlots caps the uploads being received or parsed at once, per tenant
// and in all. Every parse of an upload holds one, whichever door it came
// in by (a body sent to REST, a list given to MCP, a file of the web page,
// a stored upload estimated or submitted by its id), and so does a body
// while it is received: what each costs (a spool on disk up to MaxBytes, a
// parse, a database transaction) is bounded however many are asked for.
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

// acquire takes a slot for tenant, or returns a *TooManyUploadsError;
// release gives it back (once: a second call does nothing).
func (u *uploadSlots) acquire(tenant string) (release func(), err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.byTenant[tenant] >= u.perTenant:
		return nil, &TooManyUploadsError{RetryAfter: UploadRetryAfter, Message: fmt.Sprintf(
			"this tenant already has %d uploads in progress, the most it may; retry when one is done", u.perTenant)}
	case u.inUse >= u.total:
		return nil, &TooManyUploadsError{RetryAfter: UploadRetryAfter, Message: fmt.Sprintf(
			"the server is receiving %d uploads, the most it takes at once; retry shortly", u.total)}
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

// heldSlot marks a context whose upload holds a slot of tenant.
type heldSlot struct{ tenant string }

type heldSlotKey struct{}

// UploadSlot takes an upload slot for p's tenant, for a door that receives
// the upload before it calls the service (REST spools the body to disk
// first): the context returned carries it, so that the service's parse of
// that upload takes no second one. Past the slots it is a
// *TooManyUploadsError. Call release once the upload is done.
func (s *Service) UploadSlot(ctx context.Context, p Principal) (_ context.Context, release func(), err error) {
	if p.Tenant == "" {
		return ctx, func() {}, ErrNoTenant
	}
	release, err = s.slots.acquire(p.Tenant)
	if err != nil {
		return ctx, func() {}, err
	}
	return context.WithValue(ctx, heldSlotKey{}, heldSlot{tenant: p.Tenant}), release, nil
}

// uploadSlot takes a slot for the parse of an upload of tenant, unless ctx
// already holds one for it (UploadSlot).
func (s *Service) uploadSlot(ctx context.Context, tenant string) (release func(), err error) {
	if h, ok := ctx.Value(heldSlotKey{}).(heldSlot); ok && h.tenant == tenant {
		return func() {}, nil
	}
	if tenant == "" {
		return nil, ErrNoTenant
	}
	return s.slots.acquire(tenant)
}
