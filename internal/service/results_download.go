package service

import (
	"context"
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Downloads.
const (
	// DownloadsAtOnce caps the downloads streaming at once in a process:
	// each holds a Postgres connection to its end (the API's pool holds
	// 16); more wait for a slot.
	DownloadsAtOnce = 6
	// DownloadBatch is the rows a download reads from Postgres at a time; a
	// door that bounds its writes bounds each so many rows.
	DownloadBatch = store.StreamBatch
	// DownloadIdle is the longest a door may take to write DownloadBatch
	// rows before its transaction is ended by Postgres (above the API's
	// write deadline of a minute a page).
	DownloadIdle = 3 * time.Minute
)

// DownloadQuery selects the results a download streams.
type DownloadQuery struct {
	State  domain.RowState // "" every state
	Cursor string          // "" from the first row; else a NextCursor this service gave
	// ExtraKeys reads the keys of the rows' extras before the rows (a
	// CSV's header), in the same snapshot.
	ExtraKeys bool
	// Limit stops after so many rows (0: every row); next then says where
	// the rest starts.
	Limit int
}

// Download is what a download begins with, before its first row.
type Download struct {
	JobID     string
	ExtraKeys []string // when asked: every key the rows' extras hold, sorted
}

// DownloadResults streams every result of the tenant's job id after the
// query's cursor, in row order (scope read): one pass over a snapshot of
// the job, each row read once, whatever its size. begin is called once,
// before the first row; an error returned before it is the request's
// (not found, bad state or cursor), one after it ends a stream already
// begun (a door cannot change its status then). each is called for every
// row; its error ends the stream and is returned. With a limit, next is
// the cursor of the rows after the last one given, nil when none follow.
// The download is one line of the audit log, with the rows it gave.
func (s *Service) DownloadResults(ctx context.Context, p Principal, id string, q DownloadQuery, begin func(Download) error, each func(Result) error) (next *string, err error) {
	began := false
	defer func() {
		if !began {
			err = notFound("job", err)
		}
	}()
	if err := p.Require(domain.ScopeRead); err != nil {
		return nil, err
	}
	if err := checkRowState(q.State); err != nil {
		return nil, err
	}
	var afterID int64
	if q.Cursor != "" {
		if afterID, err = decodeResultCursor(q.Cursor); err != nil {
			return nil, err
		}
	}
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	if err != nil {
		return nil, err
	}
	select {
	case s.downloads <- struct{}{}:
		defer func() { <-s.downloads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rows, last := 0, int64(0)
	err = s.store.StreamResults(ctx, store.ResultStream{JobID: job.ID, State: q.State, AfterID: afterID, ExtraKeys: q.ExtraKeys, Idle: DownloadIdle},
		func(keys []string) error {
			began = true
			return begin(Download{JobID: job.ID, ExtraKeys: keys})
		}, func(r Result) error {
			if q.Limit > 0 && rows == q.Limit {
				c := encodeResultCursor(last)
				next = &c
				return errLimitReached
			}
			if err := each(r); err != nil {
				return err
			}
			rows, last = rows+1, r.RowID
			return nil
		})
	if errors.Is(err, errLimitReached) {
		err = nil
	}
	if began {
		// The rows given, even to a client gone half-way.
		if aerr := s.audit(context.WithoutCancel(ctx), p, store.AuditResultsDownload, job.ID, rows); err == nil {
			err = aerr
		}
	}
	return next, err
}

// errLimitReached ends a download at its limit.
var errLimitReached = errors.New("service: download limit reached")
