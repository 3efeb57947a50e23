package service

import (
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
)

// Counted records what an upload held as its Feed runs, and counts its
// distinct lookups, for the job's record and the estimate: every door's
// uploads are counted alike.
type Counted struct {
	sum      ingest.Summary
	distinct jobs.DistinctLookups
	ran      bool
}

// Feed is the Feed of a Submission that runs parse, counting what it emits.
func (c *Counted) Feed(parse func(emit func(ingest.Lookup) error) (ingest.Summary, error)) func(func(ingest.Lookup) error) error {
	return func(emit func(ingest.Lookup) error) error {
		sum, err := parse(func(l ingest.Lookup) error {
			c.distinct.Add(l)
			return emit(l)
		})
		c.sum, c.ran = sum, err == nil
		return err
	}
}

// Upload is what the feed found; empty before it has run (or when c is nil).
func (c *Counted) Upload() UploadHeld {
	if c == nil || !c.ran {
		return UploadHeld{}
	}
	rows, distinct := c.sum.Rows, c.distinct.Len()
	return UploadHeld{Columns: c.sum.Columns, ExtraColumns: c.sum.Extra, RowsUploaded: &rows, DistinctLookups: &distinct}
}

// Fields is what the feed found, named as in a job's status.
func (c *Counted) Fields() UploadFields { return UploadFieldsOf(c.Upload()) }
