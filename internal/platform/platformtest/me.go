package platformtest

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// versionOK is the shape of Platform-Version: six digits YYYYMM.
func versionOK(v string) bool {
	if len(v) != 6 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	m := (v[4]-'0')*10 + (v[5] - '0')
	return m >= 1 && m <= 12
}

func (p *Platform) me(w http.ResponseWriter, r *http.Request) {
	// The three headers, exactly. A missing or malformed one is a 400 whose
	// message names no cause (given).
	auth := r.Header.Values("Authorization")
	version := r.Header.Values("Platform-Version")
	restli := r.Header.Values("X-Restli-Protocol-Version")
	if len(version) != 1 || !versionOK(version[0]) || len(restli) != 1 || restli[0] != "2.0.0" {
		apiError(w, http.StatusBadRequest, "Invalid request")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retired[version[0]] {
		apiError(w, http.StatusUpgradeRequired, "Requested version "+version[0]+" is not active")
		return
	}
	if len(auth) != 1 || !strings.HasPrefix(auth[0], "Bearer ") {
		apiError(w, http.StatusUnauthorized, "Empty oauth2 access token")
		return
	}
	now := p.opts.Now()
	t, ok := p.access[strings.TrimPrefix(auth[0], "Bearer ")]
	switch {
	case !ok:
		apiError(w, http.StatusUnauthorized, "Invalid access token")
		return
	case t.revoked:
		apiError(w, http.StatusUnauthorized, "The token used in the request has been revoked by the user")
		return
	case !now.Before(t.expires):
		apiError(w, http.StatusUnauthorized, "The token used in the request has expired")
		return
	case !slices.Contains(t.scopes, "profile"):
		apiError(w, http.StatusForbidden, "Not enough permissions to access: me.GET.NO_VERSION")
		return
	}
	if len(p.faults) > 0 {
		status := p.faults[0]
		p.faults = p.faults[1:]
		apiError(w, status, "Internal Server Error")
		return
	}
	p.rollDay()
	if (p.appQuota > 0 && p.appCalls >= p.appQuota) || (p.memQuota > 0 && p.memCalls[t.member] >= p.memQuota) {
		// Which quota was hit is not said (given).
		apiError(w, http.StatusTooManyRequests, "Resource level throttle limit for calls to this resource is reached.")
		return
	}
	p.appCalls++
	p.memCalls[t.member]++
	m := p.members[t.member]
	p.profiles++
	body := map[string]any{
		"id":                 m.ID,
		"sub":                m.ID,
		"localizedFirstName": m.FirstName,
		"localizedLastName":  m.LastName,
		"localizedHeadline":  m.Headline,
		"vanityName":         m.VanityName,
		"profilePicture":     map[string]string{"displayImage": "urn:li:digitalmediaAsset:" + hash(m.ID)},
		"name":               strings.TrimSpace(m.FirstName + " " + m.LastName),
		"given_name":         m.FirstName,
		"family_name":        m.LastName,
		"locale":             map[string]string{"country": "US", "language": "en"},
		"x_fake_served_at":   now.UTC().Format(time.RFC3339),
	}
	if slices.Contains(t.scopes, "email") && m.Email != "" {
		body["email"] = m.Email
		body["email_verified"] = true
	}
	writeJSON(w, http.StatusOK, body)
}
