package web

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/service"
)

// jobsPerPage is how many jobs the list shows at once.
const jobsPerPage = 25

type jobsData struct {
	Jobs []service.JobStatus
	Next string // the cursor of the next page; "" on the last
}

// Jobs is the tenant's jobs, newest first, a page at a time.
func (u *UI) Jobs(w http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r.Context())
	list, err := u.svc.ListJobs(r.Context(), s.Principal, r.URL.Query().Get("cursor"), jobsPerPage)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := jobsData{Jobs: list.Jobs}
	if list.NextCursor != nil {
		d.Next = *list.NextCursor
	}
	u.render(w, r, http.StatusOK, "jobs", page{Title: "Jobs", Nav: "jobs", Data: d})
}
