// Package watches holds the rules of watches (docs/watches.md): when a
// watch's runs fall (its slots), which month a run's credits count against
// and what is left of its cap, what counts as a change between two answers,
// and how many watches and runs a tenant may make. internal/store persists
// what these rules decide and decides nothing itself; this package knows no
// SQL.
package watches

import "time"

// States of a watch.
const (
	Active = "active"
	Paused = "paused"
)

// MinEvery is the shortest period of a watch.
const MinEvery = 7 * 24 * time.Hour
