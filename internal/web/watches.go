package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// A watch is made in two steps, as a job is: the form gives the month's
// estimate (nothing is made), and its page asks to confirm the amount.

// watchForm is what the new-watch form holds, kept between its two steps.
type watchForm struct {
	JobID   string
	Every   string
	Cap     string
	Lookups []domain.Stage
}

func (f watchForm) Has(l domain.Stage) bool {
	for _, x := range f.Lookups {
		if x == l {
			return true
		}
	}
	return false
}

func readWatchForm(r *http.Request) watchForm {
	v := r.PostForm
	if r.Method == http.MethodGet {
		v = r.URL.Query()
	}
	f := watchForm{JobID: strings.TrimSpace(v.Get("job_id")), Every: strings.TrimSpace(v.Get("every")), Cap: strings.TrimSpace(v.Get("monthly_cap_credits"))}
	for _, l := range v["lookups"] {
		f.Lookups = append(f.Lookups, domain.Stage(l))
	}
	return f
}

// newWatch is the form as the service asks it; a cap that is not a whole
// number is an error naming it.
func (f watchForm) newWatch() (service.NewWatch, *problem) {
	nw := service.NewWatch{JobID: f.JobID, Every: f.Every, Lookups: f.Lookups}
	if f.JobID == "" {
		return nw, &problem{Message: "Choose the finished job whose list the watch keeps fresh."}
	}
	n, err := strconv.ParseInt(f.Cap, 10, 64)
	if err != nil || n < 0 {
		return nw, &problem{Message: "The monthly cap must be a whole number of credits, 0 or more; “" + f.Cap + "” is not."}
	}
	nw.MonthlyCapCredits = &n
	return nw, nil
}

type watchesData struct {
	Watches []service.Watch
	Jobs    []service.JobStatus // finished jobs a watch can be made from
	Form    watchForm
	Stages  []domain.Stage
	Problem *problem
	Done    string
	Names   map[string]string // job names by id, of the latest jobs
}

// Watches is the tenant's watches and the form that makes one.
func (u *UI) Watches(w http.ResponseWriter, r *http.Request) {
	f := readWatchForm(r)
	if f.Every == "" {
		f.Every = "30d"
	}
	if f.Cap == "" {
		f.Cap = "1000"
	}
	u.watchesPage(w, r, http.StatusOK, f, nil)
}

func (u *UI) watchesPage(w http.ResponseWriter, r *http.Request, status int, f watchForm, p *problem) {
	pr := sessionFrom(r.Context()).Principal
	list, err := u.svc.ListWatches(r.Context(), pr, "", service.MaxWatchesLimit)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	jobs, err := u.svc.ListJobs(r.Context(), pr, "", jobsPerPage)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := watchesData{Watches: list.Watches, Form: f, Stages: domain.Stages, Problem: p, Done: watchDone(r.URL.Query().Get("done")),
		Names: map[string]string{}}
	for _, j := range jobs.Jobs {
		if final(j.State) && j.State != domain.JobFailed && j.Watchable {
			d.Jobs = append(d.Jobs, j)
		}
		d.Names[j.ID] = jobName(j)
	}
	u.render(w, r, status, "watches", page{Title: "Watches", Nav: "watches", Data: d})
}

type watchEstimateData struct {
	Form     watchForm
	Job      service.JobStatus
	Estimate service.WatchEstimate
	Cap      int64
}

// EstimateWatch prices the watch the form describes, making nothing, and
// asks to confirm the month's amount.
func (u *UI) EstimateWatch(w http.ResponseWriter, r *http.Request) {
	p := sessionFrom(r.Context()).Principal
	f := readWatchForm(r)
	nw, prob := f.newWatch()
	if prob != nil {
		u.watchesPage(w, r, http.StatusBadRequest, f, prob)
		return
	}
	est, err := u.svc.EstimateWatch(r.Context(), p, nw)
	if err != nil {
		u.watchFailed(w, r, f, err)
		return
	}
	job, err := u.svc.JobStatus(r.Context(), p, f.JobID)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "watchconfirm", page{Title: "Confirm the watch", Nav: "watches",
		Data: watchEstimateData{Form: f, Job: job, Estimate: est, Cap: *nw.MonthlyCapCredits}})
}

// CreateWatch makes the watch its estimate's page confirmed.
func (u *UI) CreateWatch(w http.ResponseWriter, r *http.Request) {
	f := readWatchForm(r)
	nw, prob := f.newWatch()
	if prob != nil {
		u.watchesPage(w, r, http.StatusBadRequest, f, prob)
		return
	}
	c, err := u.svc.CreateWatch(r.Context(), sessionFrom(r.Context()).Principal, nw)
	if err != nil {
		u.watchFailed(w, r, f, err)
		return
	}
	http.Redirect(w, r, "/ui/watches/"+c.Watch.ID+"?done=created", http.StatusSeeOther)
}

// watchFailed shows the form again with what the service refused.
func (u *UI) watchFailed(w http.ResponseWriter, r *http.Request, f watchForm, err error) {
	if p, ok := problemOf(err); ok {
		status := http.StatusUnprocessableEntity
		if errors.As(err, new(*service.ConflictError)) {
			status = http.StatusConflict
		}
		u.watchesPage(w, r, status, f, p)
		return
	}
	u.fail(w, r, err)
}

type watchData struct {
	Watch   service.Watch
	Changes []service.WatchChange
	More    bool
	Done    string
	RunJob  string
}

// watchChangesShown is how many change lines the watch's page shows.
const watchChangesShown = 200

// Watch is a watch's page: its figures, run now, pause or resume, delete,
// and the changes its runs found.
func (u *UI) Watch(w http.ResponseWriter, r *http.Request) {
	p := sessionFrom(r.Context()).Principal
	id := r.PathValue("id")
	wa, err := u.svc.GetWatch(r.Context(), p, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ch, err := u.svc.WatchChanges(r.Context(), p, id, "", watchChangesShown)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	title := "Watch of job " + shortID(wa.SourceJobID)
	if src, err := u.svc.JobStatus(r.Context(), p, wa.SourceJobID); err == nil {
		title = "Watch of “" + jobName(src) + "”"
	} else if !errors.Is(err, service.ErrNotFound) {
		u.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	u.render(w, r, http.StatusOK, "watch", page{Title: title, Nav: "watches",
		Data: watchData{Watch: wa, Changes: ch.Changes, More: ch.NextCursor != nil, Done: watchDone(q.Get("done")), RunJob: q.Get("job")}})
}

// RunWatch runs the watch now, buying every input again within what is
// left of its month's cap.
func (u *UI) RunWatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, err := u.svc.RunWatch(r.Context(), sessionFrom(r.Context()).Principal, id, "0s")
	if err != nil {
		u.failOnJob(w, r, err) // the cap reached: 409, saying so
		return
	}
	to := "/ui/watches/" + id + "?done=run"
	if run.JobID != nil {
		to += "&job=" + *run.JobID
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// SetWatchState pauses or resumes the watch.
func (u *UI) SetWatchState(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	state := r.PostForm.Get("state")
	if _, err := u.svc.UpdateWatch(r.Context(), sessionFrom(r.Context()).Principal, id, service.WatchPatch{State: &state}); err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/watches/"+id+"?done="+state, http.StatusSeeOther)
}

// DeleteWatch removes the watch with its change lines; its runs' jobs stay.
func (u *UI) DeleteWatch(w http.ResponseWriter, r *http.Request) {
	if err := u.svc.DeleteWatch(r.Context(), sessionFrom(r.Context()).Principal, r.PathValue("id")); err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/watches?done=deleted", http.StatusSeeOther)
}

func watchDone(done string) string {
	switch done {
	case "created":
		return "The watch is made. Its first run comes after one period; “Run now” starts one at once."
	case "run":
		return "A run has started: it buys every input again, within what is left of the month’s cap."
	case "paused":
		return "The watch is paused: it runs no more until resumed."
	case "active":
		return "The watch is resumed."
	case "deleted":
		return "The watch is deleted, with its changes; the jobs of its runs stay."
	}
	return ""
}

// jobName is a job's name, else "Job" and its id's start.
func jobName(j service.JobStatus) string {
	if j.Name != "" {
		return j.Name
	}
	return "Job " + shortID(j.ID)
}
