package web

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/service"
)

type membersData struct {
	Configured bool
	Members    []service.Member
	Connected  int
	Reconnect  int
}

// Members is the platform's members of the tenant: who is connected, who
// must go through the consent screen again, and the way to start it.
func (u *UI) Members(w http.ResponseWriter, r *http.Request) {
	d := membersData{Configured: u.svc.PlatformConfigured()}
	if d.Configured {
		var err error
		if d.Members, err = u.svc.PlatformMembers(r.Context(), sessionFrom(r.Context()).Principal); err != nil {
			u.fail(w, r, err)
			return
		}
		for _, m := range d.Members {
			if m.NeedsReauth {
				d.Reconnect++
			} else {
				d.Connected++
			}
		}
	}
	u.render(w, r, http.StatusOK, "members", page{Title: "Platform members", Nav: "members", Data: d})
}

// Connect starts the platform's consent flow: a redirect to its consent
// screen, which sends the member back to the API's callback. A link (GET)
// is safe here: the session cookie is SameSite=Strict, so another site's
// link arrives signed out.
func (u *UI) Connect(w http.ResponseWriter, r *http.Request) {
	if !u.svc.PlatformConfigured() {
		u.NotFound(w, r)
		return
	}
	to, _, err := u.svc.ConnectURL(r.Context(), sessionFrom(r.Context()).Principal)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
