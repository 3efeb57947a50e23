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
