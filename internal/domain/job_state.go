package domain

// JobState is the state of a job (jobs.state).
type JobState string

// The job states. queued and running jobs have rows to work on; a paused job
// waits to be resumed; completed, canceled and failed are final.
const (
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobPaused    JobState = "paused"
	JobCompleted JobState = "completed"
	JobCanceled  JobState = "canceled"
	JobFailed    JobState = "failed"
)

// JobStates lists every job state.
var JobStates = []JobState{JobQueued, JobRunning, JobPaused, JobCompleted, JobCanceled, JobFailed}

// Valid reports whether s is one of JobStates.
func (s JobState) Valid() bool {
	switch s {
	case JobQueued, JobRunning, JobPaused, JobCompleted, JobCanceled, JobFailed:
		return true
	}
	return false
}

// Runnable reports whether workers may claim the job's rows (queued or running).
func (s JobState) Runnable() bool { return s == JobQueued || s == JobRunning }
