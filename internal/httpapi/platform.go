package httpapi

// The platform's own API (issue 6): connect a member's account (OAuth 2.0
// authorization code with PKCE and state), list connected members and whose
// token expires soon, and sync their profiles in member sync jobs. The
// platform has no lookup of a third party's profile: such a request is
// refused with 422 before any call (cold lookups go to the vendor, POST
// /v1/jobs).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jsonin"
	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/service"
)

// maxPlatformBody bounds the body of POST /v1/platform/sync.
const maxPlatformBody = 1 << 20

// platformConfigured is nil, or the 503 of a server without the platform.
func (s *server) platformConfigured() error {
	if !s.svc.PlatformConfigured() {
		return errNoPlatform
	}
	return nil
}

var errNoPlatform = errorf(http.StatusServiceUnavailable, "platform_not_configured",
	"the platform's API is not configured on this server (ENRICHQ_PLATFORM_* variables, see the README)")

// platformError maps the platform's errors to answers; others go to writeError.
func (s *server) platformError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ce      *service.ConnectError
		unknown *service.UnknownMembersError
	)
	switch {
	case errors.Is(err, platformapi.ErrColdLookup):
		msg := platformapi.ColdLookupError("").Message
		if pe, ok := platformapi.AsError(err); ok {
			msg = pe.Message
		}
		err = errorf(http.StatusUnprocessableEntity, "cold_lookup_refused", "%s", msg)
	case errors.Is(err, service.ErrPlatformNotConfigured):
		err = errNoPlatform
	case errors.Is(err, service.ErrConnectState):
		err = errorf(http.StatusBadRequest, "invalid_state", "%s", service.ErrConnectState.Error())
	case errors.As(err, &ce):
		status := http.StatusBadRequest
		if ce.Upstream {
			status = http.StatusBadGateway
		}
		err = errorf(status, ce.Code, "%s", ce.Message)
	case errors.As(err, &unknown):
		ae := errorf(http.StatusUnprocessableEntity, "unknown_members", "%d of the members are not connected members of this tenant", len(unknown.Refs))
		for i, ref := range unknown.Refs {
			if i == 100 {
				break
			}
			ae.Details = append(ae.Details, ingest.FieldError{Row: i + 1, Column: "members", Message: fmt.Sprintf("%q is not a connected member", clip(ref))})
		}
		err = ae
	case errors.Is(err, service.ErrNoMembers):
		err = errorf(http.StatusUnprocessableEntity, "no_members", "no connected members to sync: connect members first (GET /v1/platform/connect)")
	}
	s.writeError(w, r, err)
}

// connectStart is GET /v1/platform/connect: a 302 to the platform's consent
// screen, the URL also in the body for clients that hand it to a browser.
func (s *server) platformConnect(w http.ResponseWriter, r *http.Request) {
	u, ttl, err := s.svc.ConnectURL(r.Context(), principalFrom(r.Context()))
	if err != nil {
		s.platformError(w, r, err)
		return
	}
	w.Header().Set("Location", u)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusFound, connectJSON{AuthorizeURL: u, ExpiresInSeconds: int64(ttl / time.Second)})
}

type connectJSON struct {
	AuthorizeURL     string `json:"authorize_url"`
	ExpiresInSeconds int64  `json:"expires_in_seconds"`
}

// platformCallback is GET /v1/platform/callback, where the consent screen
// sends the member back. It takes no API key: the state names the tenant.
func (s *server) platformCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m, err := s.svc.CompleteConnect(r.Context(), service.ConnectCallback{State: q.Get("state"), Code: q.Get("code"),
		Error: q.Get("error"), ErrorDescription: q.Get("error_description")})
	if err != nil {
		s.platformError(w, r, err)
		return
	}
	if info := infoFrom(r.Context()); info != nil {
		info.tenant = m.Tenant
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, connectedJSON{Connected: true, Member: memberOf(m, s.Now())})
}

type connectedJSON struct {
	Connected bool       `json:"connected"`
	Member    memberJSON `json:"member"`
}

// memberJSON is a connected member; never a token.
type memberJSON struct {
	ID               string     `json:"id"`
	MemberID         string     `json:"member_id"`
	Name             string     `json:"name"`
	Email            string     `json:"email"`
	Headline         string     `json:"headline"`
	Status           string     `json:"status"`
	StatusReason     string     `json:"status_reason"`
	TokenExpiresAt   *time.Time `json:"token_expires_at"`
	Refreshable      bool       `json:"refreshable"`
	RefreshExpiresAt *time.Time `json:"refresh_expires_at"`
	ConnectionEndsAt *time.Time `json:"connection_ends_at"`
	ExpiresInSeconds *int64     `json:"expires_in_seconds"`
	Scopes           []string   `json:"scopes"`
	ConnectedAt      time.Time  `json:"connected_at"`
	RefreshedAt      *time.Time `json:"refreshed_at"`
	LastSyncedAt     *time.Time `json:"last_synced_at"`
}

func memberOf(m service.PlatformMember, now time.Time) memberJSON {
	j := memberJSON{ID: m.ID, MemberID: m.MemberID, Name: m.Name, Email: m.Email, Headline: m.Headline, Status: m.Status,
		StatusReason: m.StatusReason, TokenExpiresAt: utc(m.Token.ExpiresAt), Refreshable: m.Token.Refreshable,
		RefreshExpiresAt: utc(m.Token.RefreshExpiresAt), ConnectionEndsAt: utc(m.ConnectionEndsAt()), Scopes: nonNil(m.Token.Scopes),
		ConnectedAt: m.ConnectedAt.UTC(), RefreshedAt: utc(m.RefreshedAt), LastSyncedAt: utc(m.LastSyncedAt)}
	if ends := m.ConnectionEndsAt(); ends != nil {
		secs := max(int64(ends.Sub(now)/time.Second), 0)
		j.ExpiresInSeconds = &secs
	}
	return j
}

type memberList struct {
	Members    []memberJSON `json:"members"`
	NextCursor *string      `json:"next_cursor"`
}

// platformMembers is GET /v1/platform/members?expiring_within=7d&status=&limit=&cursor=.
func (s *server) platformMembers(w http.ResponseWriter, r *http.Request) {
	if err := s.platformConfigured(); err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	limit, err := limitParam(q, 100, 1000)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := service.MemberFilter{Status: q.Get("status"), After: q.Get("cursor"), Limit: limit + 1}
	switch f.Status {
	case "", service.MemberActive, service.MemberNeedsReauth:
	default:
		s.writeError(w, r, badParam("status", "status must be active or needs_reauth"))
		return
	}
	if v := q.Get("expiring_within"); v != "" {
		d, err := parseWindow(v)
		if err != nil {
			s.writeError(w, r, badParam("expiring_within", "expiring_within %q: want a duration such as 7d or 36h", clip(v)))
			return
		}
		before := s.Now().Add(d)
		f.EndingBefore = &before
	}
	members, err := s.svc.ListMembers(r.Context(), principalFrom(r.Context()), f)
	if err != nil {
		if strings.Contains(err.Error(), "bad cursor") {
			err = badParam("cursor", "cursor is not one this API gave")
		}
		s.platformError(w, r, err)
		return
	}
	out := memberList{Members: []memberJSON{}}
	now := s.Now()
	for i, m := range members {
		if i == limit {
			c := members[i-1].ID
			out.NextCursor = &c
			break
		}
		out.Members = append(out.Members, memberOf(m, now))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// parseWindow reads a duration given as a Go duration or in whole days ("7d").
func parseWindow(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 3650 {
			return 0, errors.New("bad days")
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

// platformMember is GET /v1/platform/members/{id}.
func (s *server) platformMember(w http.ResponseWriter, r *http.Request) {
	m, err := s.svc.GetMember(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.platformError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, memberOf(m, s.Now()))
}

// profileLookupParams are the names a request to look a profile up by URL
// through the platform might use.
var profileLookupParams = []string{"profile_url", "profile_urls", "url", "urls", "rows", "vanity_name"}

// platformProfile is GET /v1/platform/profile?member=ID: the member's
// profile as last read from the platform. Asked for a profile URL (a cold
// lookup), it answers 422 before any call: cold lookups go to the vendor.
func (s *server) platformProfile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, k := range profileLookupParams {
		if q.Has(k) {
			s.platformError(w, r, platformapi.ColdLookupError(q.Get(k)))
			return
		}
	}
	if err := service.GuardMembers([]string{q.Get("member")}); err != nil {
		s.platformError(w, r, err)
		return
	}
	if err := s.platformConfigured(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if q.Get("member") == "" {
		s.writeError(w, r, badParam("member", "member is required: the id of a connected member"))
		return
	}
	m, err := s.svc.GetMember(r.Context(), principalFrom(r.Context()), q.Get("member"))
	if err != nil {
		s.platformError(w, r, err)
		return
	}
	profile := json.RawMessage(m.Profile)
	if len(profile) == 0 {
		profile = json.RawMessage("null")
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, memberProfileJSON{Member: memberOf(m, s.Now()), Profile: profile})
}

type memberProfileJSON struct {
	Member  memberJSON      `json:"member"`
	Profile json.RawMessage `json:"profile"`
}

// syncRequest is the body of POST /v1/platform/sync: "members" is a list of
// member ids (enrichq's or the platform's) or the string "all".
type syncRequest struct {
	Name    string          `json:"name"`
	Members json.RawMessage `json:"members"`
}

// platformSync is POST /v1/platform/sync.
func (s *server) platformSync(w http.ResponseWriter, r *http.Request) {
	if err := s.platformConfigured(); err != nil {
		s.writeError(w, r, err)
		return
	}
	key, err := idempotencyKey(r.Header.Values("Idempotency-Key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := readSyncRequest(w, r)
	if err != nil {
		s.platformError(w, r, err)
		return
	}
	req.IdempotencyKey = key
	st, created, err := s.svc.SubmitSync(r.Context(), principalFrom(r.Context()), req)
	if err != nil {
		s.platformError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/platform/sync/"+st.ID)
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, st)
		return
	}
	writeJSON(w, http.StatusCreated, st)
}

// readSyncRequest decodes and checks the body of POST /v1/platform/sync. A
// profile URL anywhere in it is a cold lookup, refused before anything else.
func readSyncRequest(w http.ResponseWriter, r *http.Request) (service.SyncRequest, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPlatformBody))
	if err != nil {
		return service.SyncRequest{}, &bodyError{err}
	}
	var fields map[string]json.RawMessage
	if err := jsonError("invalid_json", jsonin.Decode(body, &fields)); err != nil {
		return service.SyncRequest{}, err
	}
	for _, k := range profileLookupParams {
		if v, ok := fields[k]; ok {
			return service.SyncRequest{}, platformapi.ColdLookupError(firstString(v))
		}
	}
	for k := range fields {
		if k != "name" && k != "members" {
			return service.SyncRequest{}, &apiError{Status: http.StatusUnprocessableEntity, Code: "unknown_field",
				Message: fmt.Sprintf("unknown field %q: the body has name and members", clip(k)), Details: []ingest.FieldError{{Column: k, Message: "unknown field"}}}
		}
	}
	if string(fields["name"]) == "null" {
		return service.SyncRequest{}, &apiError{Status: http.StatusBadRequest, Code: "invalid_json",
			Message: "name: cannot be null: leave it out, or give a string", Details: []ingest.FieldError{{Column: "name", Message: "cannot be null"}}}
	}
	var in syncRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return service.SyncRequest{}, errorf(http.StatusBadRequest, "invalid_json", "%s", clip(err.Error()))
	}
	req := service.SyncRequest{Name: in.Name}
	var all string
	var list []string
	switch {
	case len(in.Members) == 0 || string(in.Members) == "null":
		return req, &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_members",
			Message: `members is required: a list of member ids, or "all"`, Details: []ingest.FieldError{{Column: "members", Message: "required"}}}
	case json.Unmarshal(in.Members, &all) == nil:
		if all != "all" {
			if platformapi.LooksLikeProfileURL(all) {
				return req, platformapi.ColdLookupError(all)
			}
			return req, &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_members",
				Message: `members must be a list of member ids, or "all"`, Details: []ingest.FieldError{{Column: "members", Message: "not a list"}}}
		}
		req.All = true
	case json.Unmarshal(in.Members, &list) == nil:
		if len(list) == 0 || len(list) > 100000 {
			return req, &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_members",
				Message: "members must list from 1 to 100000 member ids", Details: []ingest.FieldError{{Column: "members", Message: "empty or too long"}}}
		}
		req.Members = list
	default:
		return req, &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_members",
			Message: `members must be a list of member ids (strings), or "all"`, Details: []ingest.FieldError{{Column: "members", Message: "not a list of strings"}}}
	}
	return req, nil
}

// firstString is v as a string, or its first string if it is a list, else its JSON.
func firstString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil && len(list) > 0 {
		return firstString(list[0])
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) == nil {
		for _, k := range profileLookupParams {
			if x, ok := obj[k]; ok {
				return firstString(x)
			}
		}
	}
	return clip(string(v))
}

// platformSyncStatus is GET /v1/platform/sync/{id}.
func (s *server) platformSyncStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.MemberSync(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, st)
}

// platformSyncResume is POST /v1/platform/sync/{id}/resume: a job paused by
// the platform (a retired or missing version) goes on, once the workers run
// with a newer ENRICHQ_PLATFORM_VERSION. 409 unless the job is paused.
func (s *server) platformSyncResume(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.ResumeMemberSync(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
