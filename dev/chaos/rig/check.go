package rig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/store"
)

// Figures are the invariants of one job after a fault, from Postgres and
// from the fake vendor's ledger.
//
// Definitions:
//
//   - Lost: a lookup of the upload that is not terminal at the end (pending,
//     in_flight or retry_wait), plus a lookup of the upload that was never
//     stored (Expected - Stored, when Expected is known).
//   - Double-charged: an input (profile query, or the profile URL of an email
//     or phone lookup) that the vendor's ledger shows billed by two or more
//     calls of the job. The vendor's ledger holds only calls that did work and
//     billed them: an idempotent replay (same Idempotency-Key, same request)
//     is not in it and costs nothing, so every repeat is a second payment.
//     A miss of email or phone costs nothing and is not counted. The upload
//     must hold each input once (else a repeat may be the upload's own).
//   - Money: enrichq's ledger (credit_ledger: charged of settled and unknown
//     calls) against the vendor's ledger for the same Idempotency-Keys. A
//     call whose outcome is unknown (timeout or reset after sending) is
//     counted at its reservation, the worst case, until reconciled; so
//     enrichq may exceed the vendor by what those calls were over-counted,
//     key by key, and by nothing else. Anything else is Unexplained.
type Figures struct {
	JobID    string
	State    string
	Reason   string
	Expected int // lookups the upload asked for; 0: not checked
	Stored   int // job_rows of the job
	Terminal int
	States   map[string]int
	Open     int // not terminal
	Missing  int // Expected - Stored when positive
	Extra    int // Stored - Expected when positive (a row stored twice)
	Lost     int // Open + Missing

	// Inconsistent counts terminal rows whose results contradict their state
	// (matched without a result, no_match with one or without a marker,
	// failed or skipped without a reason): a half-written outcome.
	Inconsistent int
	// FailedReasons groups the reasons of failed rows (first 60 characters).
	FailedReasons map[string]int
	MaxAttempts   int
	LeaseExpired  int // rows that were taken back from a lost worker at least once

	// enrichq's ledger of the job.
	Settled, Unknown, Reserved int64
	Calls, UnknownCalls        int
	ReservedCalls              int
	ExpiredReservations        int   // reservations a lost worker held, counted as spent by the scheduler
	JobSpent                   int64 // jobs.credits_spent
	JobReserved                int64 // jobs.credits_reserved

	// The vendor's ledger, calls under the job's Idempotency-Keys.
	Vendor      int64
	VendorCalls int
	// Overcount is what enrichq counts beyond the vendor's bill for calls of
	// unknown outcome (and reservations still open): legitimate until reconciled.
	Overcount int64
	// Unexplained is the difference not explained by calls of unknown
	// outcome: must be 0.
	Unexplained int64
	// UnexplainedKeys are a few Idempotency-Keys behind Unexplained.
	UnexplainedKeys []string

	DoubleCharged int            // inputs billed more than once
	ExtraBillings int            // billings beyond the first
	DoubleCauses  map[string]int // what enrichq's ledger says of the first billing of a double-charged input
	DoubleSamples []string       // a few of them
}

// Money reports whether the credits reconcile: nothing unexplained.
func (f Figures) Money() bool { return f.Unexplained == 0 }

// OK reports whether every invariant holds.
func (f Figures) OK() bool {
	return f.Lost == 0 && f.Extra == 0 && f.Inconsistent == 0 && f.DoubleCharged == 0 && f.Money() && f.JobSpent == f.Settled+f.Unknown
}

// Line is the one-line figure: rows terminal, lost, double-charged, credits.
func (f Figures) Line() string {
	var b strings.Builder
	total := f.Expected
	if total == 0 {
		total = f.Stored
	}
	fmt.Fprintf(&b, "%d/%d rows terminal, %d lost, %d double-charged, ", f.Terminal, total, f.Lost, f.DoubleCharged)
	b.WriteString(f.MoneyText())
	if f.Inconsistent > 0 {
		fmt.Fprintf(&b, "; %d rows half-written", f.Inconsistent)
	}
	if f.Extra > 0 {
		fmt.Fprintf(&b, "; %d rows stored twice", f.Extra)
	}
	return b.String()
}

// MoneyText is "credits X = vendor Y" with what explains a difference.
func (f Figures) MoneyText() string {
	ours := f.Settled + f.Unknown
	var b strings.Builder
	switch d := ours - f.Vendor; {
	case f.Unexplained != 0:
		fmt.Fprintf(&b, "credits %d != vendor %d (%d unexplained", ours, f.Vendor, f.Unexplained)
		if f.UnknownCalls > 0 {
			fmt.Fprintf(&b, "; %d calls of unknown outcome", f.UnknownCalls)
		}
		b.WriteString(")")
	case d == 0:
		fmt.Fprintf(&b, "credits %d = vendor %d", ours, f.Vendor)
	case d > 0:
		fmt.Fprintf(&b, "credits %d = vendor %d + %d counted at worst case for %d calls of unknown outcome (spent until reconciled)",
			ours, f.Vendor, d, f.UnknownCalls)
	default:
		fmt.Fprintf(&b, "credits %d = vendor %d - %d billed to calls still reserved", ours, f.Vendor, -d)
	}
	if f.Reserved > 0 {
		fmt.Fprintf(&b, "; %d credits still reserved by %d calls (spent when they expire)", f.Reserved, f.ReservedCalls)
	}
	if f.JobSpent != ours {
		fmt.Fprintf(&b, "; but the job says %d spent", f.JobSpent)
	}
	return b.String()
}

// VendorLedger reads the fake vendor's ledger, every entry, from its
// control endpoint.
func VendorLedger(ctx context.Context, vendorURL string) (enrichtest.SeedLedgerSummary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(vendorURL, "/")+"/_fake/ledger?entries=1", nil)
	if err != nil {
		return enrichtest.SeedLedgerSummary{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return enrichtest.SeedLedgerSummary{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return enrichtest.SeedLedgerSummary{}, fmt.Errorf("GET /_fake/ledger: %s", resp.Status)
	}
	var s enrichtest.SeedLedgerSummary
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return enrichtest.SeedLedgerSummary{}, fmt.Errorf("GET /_fake/ledger: %w", err)
	}
	return s, nil
}

// CheckJob computes the figures of one job. expected is the number of
// lookups the upload asked for (0: not checked); vendor is the fake vendor's
// whole ledger (entries of other jobs are ignored: calls are matched to the
// job by Idempotency-Key).
func CheckJob(ctx context.Context, st *store.Store, jobID string, expected int, vendor []enrichtest.SeedLedgerEntry) (Figures, error) {
	f := Figures{JobID: jobID, Expected: expected, States: map[string]int{}, FailedReasons: map[string]int{}, DoubleCauses: map[string]int{}}
	job, err := st.JobByID(ctx, jobID)
	if err != nil {
		return f, fmt.Errorf("chaos: job %s: %w", jobID, err)
	}
	f.State, f.Reason, f.JobSpent, f.JobReserved = string(job.State), job.StateReason, job.CreditsSpent, job.CreditsReserved
	const page = 1000
	for after := int64(0); ; {
		rows, err := st.ListResults(ctx, jobID, "", after, page)
		if err != nil {
			return f, fmt.Errorf("chaos: rows of job %s: %w", jobID, err)
		}
		for _, r := range rows {
			countRow(&f, r)
			after = r.RowID
		}
		if len(rows) < page {
			break
		}
	}
	if expected > 0 {
		f.Missing = max(0, expected-f.Stored)
		f.Extra = max(0, f.Stored-expected)
	}
	f.Lost = f.Open + f.Missing

	ledger, err := st.LedgerEntries(ctx, jobID)
	if err != nil {
		return f, fmt.Errorf("chaos: ledger of job %s: %w", jobID, err)
	}
	reconcile(&f, ledger, vendor)
	return f, nil
}

// countRow adds one stored row to the figures: its state, attempts, lease
// expiries, failure reason, and whether its results agree with its state.
func countRow(f *Figures, r store.Result) {
	f.States[string(r.State)]++
	f.Stored++
	f.MaxAttempts = max(f.MaxAttempts, r.Attempts)
	if strings.HasPrefix(r.LastError, "lease expired") {
		f.LeaseExpired++
	}
	if r.State.Open() {
		f.Open++
	} else {
		f.Terminal++
	}
	if r.State == domain.RowFailed {
		reason := []rune(r.StateReason)
		f.FailedReasons[string(reason[:min(len(reason), 60)])]++
	}
	found := r.Profile != nil || r.FoundEmail != nil || r.FoundPhones != nil
	switch r.State {
	case domain.RowMatched:
		if !found {
			f.Inconsistent++
		}
	case domain.RowNoMatch:
		if found || len(r.NoMatches) == 0 {
			f.Inconsistent++
		}
	case domain.RowFailed, domain.RowSkipped:
		if r.StateReason == "" {
			f.Inconsistent++
		}
	}
}

// keyMoney is enrichq's and the vendor's account of one Idempotency-Key.
type keyMoney struct {
	ours      int64 // settled + unknown
	reserved  int64 // still reserved
	unknown   bool
	open      bool
	vendor    int64
	billedErr string // error of a call under the key that was billed anyway (a malformed answer)
}

func reconcile(f *Figures, ledger []store.LedgerEntry, vendor []enrichtest.SeedLedgerEntry) {
	keys := map[string]*keyMoney{}
	for _, r := range ledger {
		f.Calls++
		k := keys[r.IdempotencyKey]
		if k == nil {
			k = &keyMoney{}
			keys[r.IdempotencyKey] = k
		}
		if r.Status == "settled" && r.Charged > 0 && r.Error != "" && k.billedErr == "" {
			k.billedErr = r.Error
		}
		switch r.Status {
		case "settled":
			f.Settled += r.Charged
			k.ours += r.Charged
		case "unknown":
			f.Unknown += r.Charged
			f.UnknownCalls++
			k.ours += r.Charged
			k.unknown = true
			if strings.HasPrefix(r.Error, "reservation expired") {
				f.ExpiredReservations++
			}
		case "reserved":
			f.Reserved += r.Reserved
			f.ReservedCalls++
			k.reserved += r.Reserved
			k.open = true
		}
	}
	// The vendor's bill for the job's keys, and who bought what.
	type billing struct {
		entry int
		key   string
	}
	bought := map[string][]billing{}
	for i, e := range vendor {
		k := keys[e.IdempotencyKey]
		if e.IdempotencyKey == "" || k == nil {
			continue
		}
		f.Vendor += e.Credits
		f.VendorCalls++
		k.vendor += e.Credits
		kind := e.Endpoint
		if kind == "bulk" {
			kind = "profile"
		}
		if (kind == "email" || kind == "phone") && e.Credits == 0 {
			continue // a miss: not billed
		}
		for _, in := range e.Inputs {
			id := kind + " " + in
			bought[id] = append(bought[id], billing{i, e.IdempotencyKey})
		}
	}
	var bad []string
	for key, k := range keys {
		diff := k.ours - k.vendor
		switch {
		case k.unknown || k.open:
			// Counted at the worst case (or about to be): at least what the vendor billed.
			diff += k.reserved
			if diff >= 0 {
				f.Overcount += diff
			} else {
				f.Unexplained += -diff
				bad = append(bad, key)
			}
		case diff != 0:
			f.Unexplained += max(diff, -diff)
			bad = append(bad, key)
		}
	}
	sort.Strings(bad)
	f.UnexplainedKeys = bad[:min(len(bad), 5)]

	var ids []string
	for id, bs := range bought {
		if len(bs) < 2 {
			continue
		}
		f.DoubleCharged++
		f.ExtraBillings += len(bs) - 1
		first := keys[bs[0].key]
		cause := "first answer received and settled"
		switch {
		case first.unknown:
			cause = "first answer lost (outcome unknown)"
		case first.billedErr != "":
			cause = "first answer unusable (" + firstWords(first.billedErr) + ")"
		}
		f.DoubleCauses[cause] += len(bs) - 1
		ids = append(ids, id)
	}
	sort.Strings(ids)
	f.DoubleSamples = ids[:min(len(ids), 3)]
}

// firstWords shortens a vendor error to its class, e.g. "malformed_response".
func firstWords(s string) string {
	if i := strings.Index(s, "code "); i >= 0 {
		rest := s[i+5:]
		if j := strings.IndexAny(rest, ": ("); j > 0 {
			return rest[:j]
		}
	}
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// Totals is the whole account: every job in the database against the
// vendor's whole ledger.
type Totals struct {
	Ours, Unknown, Reserved int64 // enrichq: settled + unknown, of which unknown; still reserved
	Vendor                  int64
	Orphan                  int64 // billed by the vendor under a key enrichq has no ledger row of
	OrphanCalls             int
}

// CheckTotals sums every job's ledger against the vendor's whole ledger.
func CheckTotals(ctx context.Context, st *store.Store, vendor []enrichtest.SeedLedgerEntry) (Totals, error) {
	book, err := st.LedgerBook(ctx)
	if err != nil {
		return Totals{}, fmt.Errorf("chaos: ledger: %w", err)
	}
	t := Totals{Ours: book.Charged, Unknown: book.Unknown, Reserved: book.Reserved}
	for _, e := range vendor {
		t.Vendor += e.Credits
		if !book.Keys[e.IdempotencyKey] {
			t.Orphan += e.Credits
			t.OrphanCalls++
		}
	}
	return t, nil
}
