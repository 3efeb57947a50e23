package watches

import (
	"math"
	"time"
)

// month is a month of runs, for the runs a month holds.
const month = 30 * 24 * time.Hour

// MonthOf is the first day (UTC) of t's month: a run's credits count
// against the month it started in.
func MonthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Left is what a run may spend: the month's cap less what the watch's runs
// of the month took; nothing left (<= 0) is the cap reached.
func Left(capCredits, used int64) int64 { return capCredits - used }

// RunsPerMonth is how many runs of a period a month holds, to two decimals.
func RunsPerMonth(every time.Duration) float64 {
	return math.Round(float64(month)/float64(every)*100) / 100
}

// PerMonth is credits per run over a month of runs, rounded up.
func PerMonth(credits int64, every time.Duration) int64 {
	return int64(math.Ceil(float64(credits) * float64(month) / float64(every)))
}
