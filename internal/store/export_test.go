package store

// HotStatements are the statements a worker runs for every chunk (or every
// few), by what they do: the plan test reads their generic plans.
var HotStatements = map[string]string{
	"claim chunk":     claimChunkSQL,
	"cached answers":  cachedAnswersSQL,
	"claim lookups":   claimLookupsSQL,
	"save outcomes":   saveOutcomesSQL,
	"release lookups": releaseLookupsSQL,
	"extend claims":   extendClaimsSQL,
	"skip canceled":   skipCanceledRowsOfJobSQL,
	"finish job":      finishJobSQL,
	"dispatch next":   dispatchNextSQL,
	"next due":        nextDueSQL,
}
