package seed

import "github.com/enrichq/enrichq/internal/enrich"

// The answers of the [Client]'s calls.

// ProfileResult answers [Client.Profile]. Profile is nil when there was no
// match (a result, not an error: the search is still charged).
type ProfileResult struct {
	Profile   *enrich.Profile
	Charge    enrich.Charge
	RateLimit *enrich.RateLimit // nil when no X-RateLimit-* header was sent
}

// EmailResult answers [Client.Email]. Email is nil when there was no match.
type EmailResult struct {
	Email     *enrich.Email
	Charge    enrich.Charge
	RateLimit *enrich.RateLimit
}

// PhoneResult answers [Client.Phone]. Phones is nil when there was no match.
type PhoneResult struct {
	Phones    *enrich.Phones
	Charge    enrich.Charge
	RateLimit *enrich.RateLimit
}

// BulkResult answers [Client.Bulk]: Items[i] answers rows[i] (matched by the
// vendor's "index", never by position in its answer).
type BulkResult struct {
	Items     []enrich.BulkItem
	Charge    enrich.Charge
	RateLimit *enrich.RateLimit
}
