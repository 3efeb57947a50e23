package jobs

import (
	"context"

	"github.com/enrichq/enrichq/internal/domain"
)

// Orderer chooses the order a row asks the vendors in, and learns from
// what they answered. The waterfall asks the vendors of Order's answer one
// after the other and stops at the first accepted answer; after each answer
// it tells Observe what it was. Implementations must be cheap on Order (it
// runs once per row): learned rates are kept in memory and refreshed.
type Orderer interface {
	// Order is the order for one row: a permutation of q.Vendors (the
	// vendors that can answer the row, in the configured order). It never
	// adds a name; it may explore (answer another order for a small share
	// of rows) so that what it learns stays current.
	Order(ctx context.Context, q OrderQuery) []string
	// Observe records answers for learning. A failure to record is logged
	// by the caller, never a row's failure.
	Observe(ctx context.Context, obs []Observation) error
}

// OrderSyncer is an Orderer that reads what every worker taught it of a
// tenant: the processor calls Sync before each chunk of the tenant's rows,
// so that a job that follows another orders by what the first taught,
// whichever worker ran it. A failure is logged; the chunk orders by what
// the Orderer holds.
type OrderSyncer interface {
	Sync(ctx context.Context, tenant string) error
}

// OrderQuery is what Order decides on.
type OrderQuery struct {
	Tenant  string
	Segment domain.Segment
	// Stages are the stages the row still needs.
	Stages []domain.Stage
	// Vendors are the candidates in configured order.
	Vendors []string
	// RowID makes exploration deterministic per row: a row retried asks in
	// the same order.
	RowID int64
}

// Observation is one vendor's answer to one row's stage, for learning.
type Observation struct {
	// Tenant is the tenant whose row it was: what it teaches orders that
	// tenant's rows (and the pool, by a bounded amount, the others').
	Tenant  string
	Vendor  string
	Segment domain.Segment
	Stage   domain.Stage
	// Found: the stage was answered (a FillsAll match observes each stage
	// it was asked, with its charge on the first and 0 on the others).
	Found bool
	// Credits is what the vendor billed for this stage, in its own credits:
	// of a call that bought several stages (a bulk row's profile and its
	// email), this stage's part only.
	Credits int64
	// row is the row observed: a verifier that finds the email invalid
	// turns its finder's answer into a miss before the run's end.
	row int64
}

// StaticOrder asks the vendors in the configured order, and learns nothing.
type StaticOrder struct{}

// Order returns the configured order.
func (StaticOrder) Order(_ context.Context, q OrderQuery) []string { return q.Vendors }

// Observe does nothing.
func (StaticOrder) Observe(context.Context, []Observation) error { return nil }
