package webhook

import (
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// Payload is the body of a job.finished callback.
type Payload struct {
	Event      string `json:"event"`
	DeliveryID int64  `json:"delivery_id"`
	Job        Job    `json:"job"`
}

// Job is the finished job as a callback describes it.
type Job struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	State       domain.JobState `json:"state"`
	StateReason string          `json:"state_reason"`
	Rows        map[string]int  `json:"rows"` // a count per row state, and "total"
	Credits     map[string]any  `json:"credits"`
	CreatedAt   time.Time       `json:"created_at"`
	FinishedAt  *time.Time      `json:"finished_at"`
	ResultsURL  string          `json:"results_path"`
}

// PersonChanged is the body of a person.changed callback: the people a
// watch's run found at another company (or at none: kind left, or not
// found any more).
type PersonChanged struct {
	Event      string          `json:"event"`
	DeliveryID int64           `json:"delivery_id"`
	WatchID    string          `json:"watch_id"`
	JobID      string          `json:"job_id"`
	People     []ChangedPerson `json:"people"`
}

// ChangedPerson is one company change: the input's ref, its company
// before and now.
type ChangedPerson struct {
	Ref   string    `json:"ref"`
	Field string    `json:"field"`
	Old   *string   `json:"old"`
	New   *string   `json:"new"`
	Kind  string    `json:"kind"`
	At    time.Time `json:"at"`
}
