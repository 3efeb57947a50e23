package domain

// RowState is the state of a job row (job_rows.state).
type RowState string

// The row states. pending, in_flight and retry_wait are open; matched,
// no_match, failed and skipped are terminal.
const (
	RowPending   RowState = "pending"    // waiting to be claimed
	RowInFlight  RowState = "in_flight"  // claimed by a worker under a lease
	RowRetryWait RowState = "retry_wait" // claimable again from next_attempt_at
	RowMatched   RowState = "matched"    // some stage found something
	RowNoMatch   RowState = "no_match"   // every stage asked found nothing
	RowFailed    RowState = "failed"     // given up (permanent error, attempt cap); carries a reason
	RowSkipped   RowState = "skipped"    // not looked up (job canceled); carries a reason
)

// RowStates lists every row state, open ones first, in lifecycle order.
var RowStates = []RowState{RowPending, RowInFlight, RowRetryWait, RowMatched, RowNoMatch, RowFailed, RowSkipped}

// rowTransitions is the row lifecycle: the states each state may move to.
// The store's statements and the workers' outcomes keep to it (SaveOutcomes
// refuses an outcome it does not allow). Terminal states move nowhere.
var rowTransitions = map[RowState][]RowState{
	// Claimed by a worker, or skipped by a cancel. A row a worker holds is
	// not skipped by a cancel: the worker releases it (to pending) and the
	// cancel's sweep skips it from there.
	RowPending:   {RowInFlight, RowSkipped},
	RowRetryWait: {RowInFlight, RowSkipped},
	RowInFlight: {
		RowInFlight,  // a stage's outcome saved, the claim kept: more stages to go
		RowPending,   // released (budget, paused job, shutdown), or its lease expired under the attempt cap
		RowRetryWait, // 429, 5xx, timeout: backoff
		RowMatched, RowNoMatch,
		RowFailed,  // permanent error, or the lease expired at the attempt cap
		RowSkipped, // its person was erased while it was in flight: the answer is dropped (never a worker's own end)
	},
}

// Open reports whether s is pending, in_flight or retry_wait: the row is not done.
func (s RowState) Open() bool { return s == RowPending || s == RowInFlight || s == RowRetryWait }

// Terminal reports whether s is matched, no_match, failed or skipped: a row
// reaches exactly one of them and never leaves it.
func (s RowState) Terminal() bool {
	return s == RowMatched || s == RowNoMatch || s == RowFailed || s == RowSkipped
}

// Valid reports whether s is one of RowStates.
func (s RowState) Valid() bool { return s.Open() || s.Terminal() }

// CanBecome reports whether a row in state s may move to state t.
func (s RowState) CanBecome(t RowState) bool {
	for _, n := range rowTransitions[s] {
		if n == t {
			return true
		}
	}
	return false
}
