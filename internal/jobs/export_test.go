package jobs

// Exported for the tests of package jobs_test.
var (
	IdempotencyKey = idempotencyKey
	ProfileQueryOf = profileQuery
)
