package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// previewRows is how many result lines the job's page shows.
const previewRows = 10

// PollInterval is how often the job's page asks for the job's status while
// it runs, in milliseconds (static/job.js reads it from the page).
const PollInterval = 2000

type jobData struct {
	Job    service.JobStatus
	Live   map[string]string
	Paused bool
	// ByBudget: the job's own budget paused it (raise it); CanResume: a
	// cause that Resume lifts (an allowance, the vendor's refusal).
	ByBudget, CanResume bool
	PauseWords          string
	Preview             []service.ResultLine
	Done                string // what the last form did, said back
	Poll                int
	Open                int // rows not yet done
	Vendors             jobVendors
}

// Job is a job's page: its counts, credits, time to go, what paused it and
// the way back, cancel, downloads and the first rows of its results.
func (u *UI) Job(w http.ResponseWriter, r *http.Request) {
	p := sessionFrom(r.Context()).Principal
	id := r.PathValue("id")
	st, err := u.svc.JobStatus(r.Context(), p, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := jobData{Job: st, Live: liveFields(st), Poll: PollInterval, Done: doneWords(r.URL.Query().Get("done")),
		Open: st.Rows.Pending + st.Rows.InFlight + st.Rows.RetryWait}
	if d.Paused = st.State == domain.JobPaused; d.Paused {
		cause, err := u.svc.PauseCause(r.Context(), p, id)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		d.ByBudget = cause == domain.PausedByJobBudget
		d.CanResume = cause == domain.PausedByAllowance || cause == domain.PausedByVendorAccess
		d.PauseWords = pauseWords(cause, st.Credits.Budget)
	}
	if d.Vendors, err = u.jobVendorCharts(r, p, id); err != nil {
		u.fail(w, r, err)
		return
	}
	page1, err := u.svc.Results(r.Context(), p, id, service.ResultsQuery{Limit: previewRows})
	if err != nil {
		u.fail(w, r, err)
		return
	}
	for _, res := range page1.Results {
		d.Preview = append(d.Preview, service.LineOf(res))
	}
	name := st.Name
	if name == "" {
		name = "Job " + shortID(st.ID)
	}
	u.render(w, r, http.StatusOK, "job", page{Title: name, Nav: "jobs", Data: d})
}

// statusBody is what the job's page polls: the state and the page's live
// fields, already in words.
type statusBody struct {
	State  domain.JobState   `json:"state"`
	Final  bool              `json:"final"`
	Fields map[string]string `json:"fields"`
	// Progress is the share of rows done, 0 to 1, for the progress bar.
	Progress float64 `json:"progress"`
}

// JobStatus is the job's live fields, polled by the job's page (job.js).
func (u *UI) JobStatus(w http.ResponseWriter, r *http.Request) {
	st, err := u.svc.JobStatus(r.Context(), sessionFrom(r.Context()).Principal, r.PathValue("id"))
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, service.ErrNotFound) {
			status = http.StatusNotFound
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(statusBody{State: st.State, Final: final(st.State), Fields: liveFields(st), Progress: st.Progress})
}

// liveFields are the job page's figures that change while it runs, by the
// data-live name of the element that shows each.
func liveFields(st service.JobStatus) map[string]string {
	rc := st.Rows
	return map[string]string{
		"state":      stateWords(st.State),
		"progress":   percent(st.Progress),
		"total":      count(rc.Total),
		"open":       count(rc.Pending + rc.InFlight + rc.RetryWait),
		"pending":    count(rc.Pending),
		"in_flight":  count(rc.InFlight),
		"retry_wait": count(rc.RetryWait),
		"matched":    count(rc.Matched),
		"no_match":   count(rc.NoMatch),
		"failed":     count(rc.Failed),
		"skipped":    count(rc.Skipped),
		"spent":      credits(st.Credits.Spent),
		"reserved":   credits(st.Credits.Reserved),
		"budget":     budget(st.Credits.Budget),
		"eta":        eta(st.ETASeconds, st.State),
	}
}

// RaiseBudget sets the job's budget from its page's form; raising the
// budget of a job it paused resumes the job.
func (u *UI) RaiseBudget(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v := strings.TrimSpace(r.PostForm.Get("budget_credits"))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		u.render(w, r, http.StatusBadRequest, "error", page{Title: "Not a budget",
			Data: "The new budget must be a whole number of credits, 0 or more; “" + v + "” is not."})
		return
	}
	if _, err := u.svc.SetBudget(r.Context(), sessionFrom(r.Context()).Principal, id, &n); err != nil {
		u.failOnJob(w, r, err) // a finished job's budget: 409, saying its state
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+id+"?done=budget", http.StatusSeeOther)
}

// Resume resumes a job paused by anything but its budget.
func (u *UI) Resume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := u.svc.Resume(r.Context(), sessionFrom(r.Context()).Principal, id); err != nil {
		u.failOnJob(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+id+"?done=resume", http.StatusSeeOther)
}

// Cancel cancels the job: rows not yet looked up are skipped.
func (u *UI) Cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := u.svc.Cancel(r.Context(), sessionFrom(r.Context()).Principal, id); err != nil {
		u.failOnJob(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+id+"?done=cancel", http.StatusSeeOther)
}

// failOnJob says why the job's state refused a form, else fails.
func (u *UI) failOnJob(w http.ResponseWriter, r *http.Request, err error) {
	var ce *service.ConflictError
	if errors.As(err, &ce) {
		u.render(w, r, http.StatusConflict, "error", page{Title: "Not now", Data: ce.Message})
		return
	}
	u.fail(w, r, err)
}

func doneWords(done string) string {
	switch done {
	case "budget":
		return "The budget is changed."
	case "resume":
		return "The job is resumed."
	case "cancel":
		return "The job is canceled: rows not yet looked up are skipped."
	}
	return ""
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
