package jobs

import "github.com/enrichq/enrichq/internal/store"

// Exported for the tests of package jobs_test.
var (
	IdempotencyKey = idempotencyKey
	ProfileQueryOf = profileQuery
)

// KeyUsageVerdict is the prices a key's fall (budget units) proves of ku's
// lost calls, in their order; nil when it proves nothing.
func KeyUsageVerdict(fall int64, ku store.KeyUsage) []int64 { return keyUsageVerdict(fall, ku).prices }
