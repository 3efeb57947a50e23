package service

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// statusCache keeps each job's status (Service.JobStatus) for a short
// while, so that many clients polling one job cost Postgres one read per
// TTL, not one per poll; concurrent misses of one job share one read. A
// poll therefore sees the job as it was at most TTL ago (progress, not a
// ledger). The job's own changes through the service (cancel, budget) drop
// its entry at once.
type statusCache struct {
	ttl   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	m     map[string]statusEntry
	group singleflight.Group
}

type statusEntry struct {
	at     time.Time
	job    store.Job
	counts map[domain.RowState]int
}

// statusCacheMax bounds the entries kept; past it, stale ones are dropped.
const statusCacheMax = 10000

func newStatusCache(ttl time.Duration, now func() time.Time) *statusCache {
	return &statusCache{ttl: ttl, now: now, m: map[string]statusEntry{}}
}

// get returns the status of the tenant's job id, from the cache when it is
// fresh, else from load (shared by concurrent callers).
func (c *statusCache) get(ctx context.Context, tenant, id string,
	load func(ctx context.Context) (store.Job, map[domain.RowState]int, error)) (store.Job, map[domain.RowState]int, error) {
	if c == nil || c.ttl <= 0 {
		return load(ctx)
	}
	key := tenant + "\x00" + id
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.job, e.counts, nil
	}
	v, err, _ := c.group.Do(key, func() (any, error) {
		// Not the first caller's context: its going away must not fail the others.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		at := c.now()
		job, counts, err := load(lctx)
		if err != nil {
			return nil, err
		}
		e := statusEntry{at: at, job: job, counts: counts}
		c.mu.Lock()
		if len(c.m) >= statusCacheMax {
			for k, old := range c.m {
				if c.now().Sub(old.at) >= c.ttl {
					delete(c.m, k)
				}
			}
		}
		if len(c.m) < statusCacheMax {
			c.m[key] = e
		}
		c.mu.Unlock()
		return e, nil
	})
	if err != nil {
		return store.Job{}, nil, err
	}
	e = v.(statusEntry)
	return e.job, e.counts, nil
}

// drop forgets the tenant's job id (it was just changed).
func (c *statusCache) drop(tenant, id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.m, tenant+"\x00"+id)
	c.mu.Unlock()
}
