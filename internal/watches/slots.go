package watches

import (
	"hash/fnv"
	"time"
)

// DayOffset is where in the day (UTC) a watch's runs fall: a hash of its
// id, so that watches made at the same moment do not all run then.
func DayOffset(id string) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return time.Duration(h.Sum64()%86400) * time.Second
}

// SlotAfter is the first slot of a watch at or after t: its day's offset,
// on t's day or the day after.
func SlotAfter(t time.Time, offset time.Duration) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if s := day.Add(offset); !s.Before(t) {
		return s
	}
	return day.AddDate(0, 0, 1).Add(offset)
}

// FirstRun is a new watch's first slot: a period after now, at the watch's
// time of day.
func FirstRun(id string, every time.Duration, now time.Time) time.Time {
	return SlotAfter(now.Add(every), DayOffset(id))
}

// NextAfterRun is the next slot once the run of slot started at now: a
// period after slot, and again until it is past now (a slot overdue by
// several periods is run once).
func NextAfterRun(slot time.Time, every time.Duration, now time.Time) time.Time {
	next := slot
	for !next.After(now) {
		next = next.Add(every)
	}
	return next
}

// NextMonthSlot is the watch's first slot of the month after month: where
// its next run goes once month's cap is reached.
func NextMonthSlot(id string, month time.Time) time.Time {
	return SlotAfter(MonthOf(month).AddDate(0, 1, 0), DayOffset(id))
}

// Patch is a change of a watch's period or state, and what the next run
// depends on.
type Patch struct {
	Next     time.Time      // the next run before the change
	Every    *time.Duration // the new period; nil or the same: unchanged
	OldEvery time.Duration
	// LastSlot is the slot of the watch's last run, nil when none ran (only
	// read when the period changes).
	LastSlot *time.Time
	Resumed  bool // a paused watch made active
	Now      time.Time
}

// NextAfterPatch is the next run after a change: a new period moves it to a
// period after the last run (or after now when none ran); a resume of a
// watch whose next run is past sets it to its next slot from now (the slots
// missed while paused are not run).
func NextAfterPatch(id string, p Patch) time.Time {
	next := p.Next
	offset := DayOffset(id)
	if p.Every != nil && *p.Every != p.OldEvery {
		from := p.Now
		if p.LastSlot != nil {
			from = *p.LastSlot
		}
		next = SlotAfter(from.Add(*p.Every), offset)
	}
	if p.Resumed && next.Before(p.Now) {
		next = SlotAfter(p.Now, offset)
	}
	return next
}

// PeriodChanged says whether a patch's period differs from the watch's (the
// store then reads the last run's slot).
func PeriodChanged(every *time.Duration, old time.Duration) bool {
	return every != nil && *every != old
}
