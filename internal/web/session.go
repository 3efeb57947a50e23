package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// sessionCookie holds the session token: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure on TLS.
const sessionCookie = "enrichq_session"

type sessionKey struct{}

// sessionFrom returns the session Page or Form put in the context; nil
// outside one.
func sessionFrom(ctx context.Context) *service.WebSession {
	s, _ := ctx.Value(sessionKey{}).(*service.WebSession)
	return s
}

// PrincipalFrom returns the principal of the signed-in session of a request
// that came through Page or Form; ok false outside one.
func PrincipalFrom(ctx context.Context) (service.Principal, bool) {
	if s := sessionFrom(ctx); s != nil {
		return s.Principal, true
	}
	return service.Principal{}, false
}

// session returns the live session of the request's cookie; ok false
// when there is none. An error means the sessions or the keys could not
// be read.
//
// A session lives no longer than its key: one whose key is gone (removed
// from ENRICHQ_API_KEYS, revoked) is ended here, on its first use.
func (u *UI) session(r *http.Request) (s service.WebSession, ok bool, err error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return service.WebSession{}, false, nil
	}
	ctx := r.Context()
	s, err = u.svc.ResumeWebSession(ctx, c.Value, u.cfg.Session)
	if errors.Is(err, service.ErrNotFound) {
		return service.WebSession{}, false, nil
	}
	if err != nil {
		return service.WebSession{}, false, err
	}
	live, err := u.cfg.Keys.KeyLive(ctx, s.Principal.Tenant, s.Principal.KeyID)
	if err != nil {
		return service.WebSession{}, false, err
	}
	if !live {
		if err := u.svc.EndWebSession(ctx, c.Value); err != nil {
			return service.WebSession{}, false, err
		}
		u.cfg.Log.InfoContext(ctx, "web: a session ended: its key is gone", "tenant", s.Principal.Tenant, "key_id", s.Principal.KeyID)
		return service.WebSession{}, false, nil
	}
	return s, true, nil
}

// Open serves a page that needs no session (sign-in, the stylesheet).
func (u *UI) Open(next http.HandlerFunc) http.Handler {
	return u.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer removeFormFiles(r)
		next(w, r)
	}))
}

// Page serves next to a signed-in person whose key holds scope (""; any
// signed-in person); anyone else is sent to sign in, and a key without the
// scope gets a page saying which it lacks.
func (u *UI) Page(scope domain.Scope, next http.HandlerFunc) http.Handler {
	return u.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok, err := u.session(r)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		if !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/status") {
				http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
				return
			}
			u.render(w, r, http.StatusUnauthorized, "error", page{Title: "Signed out",
				Data: "Your session has ended. Sign in again to go on."})
			return
		}
		if u.cfg.SignedIn != nil {
			u.cfg.SignedIn(r.Context(), s.Principal)
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, &s))
		defer removeFormFiles(r) // this copy's, which net/http does not see
		if scope != "" {
			if err := s.Principal.Require(scope); err != nil {
				u.fail(w, r, err)
				return
			}
		}
		next(w, r)
	}))
}

// Form is Page for a form that changes something: the request must carry
// the session's CSRF token (csrf.go).
func (u *UI) Form(scope domain.Scope, next http.HandlerFunc) http.Handler {
	return u.Page(scope, func(w http.ResponseWriter, r *http.Request) {
		if !u.readForm(w, r) {
			return
		}
		if !u.checkCSRF(w, r, r.PostForm.Get(csrfField), sessionFrom(r.Context()).CSRFToken) {
			return
		}
		next(w, r)
	})
}

type signInData struct {
	CSRF      string
	Error     string
	Max, Idle string // the session's lifetimes, in words
}

func (u *UI) signInData(w http.ResponseWriter, r *http.Request, msg string) signInData {
	return signInData{CSRF: u.signInToken(w, r), Error: msg,
		Max: lifetime(u.cfg.Session.Max), Idle: lifetime(u.cfg.Session.Idle)}
}

// SignInPage is the sign-in form.
func (u *UI) SignInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok, _ := u.session(r); ok {
		http.Redirect(w, r, "/ui/jobs", http.StatusSeeOther)
		return
	}
	u.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Data: u.signInData(w, r, "")})
}

// SignIn turns an API key into a session: the key is checked, never kept;
// the cookie holds a random token of the session.
func (u *UI) SignIn(w http.ResponseWriter, r *http.Request) {
	if !u.readForm(w, r) || !u.checkSignInCSRF(w, r) {
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	again := func(status int, msg string) {
		u.render(w, r, status, "signin", page{Title: "Sign in", Data: u.signInData(w, r, msg)})
	}
	if key == "" {
		again(http.StatusBadRequest, "Enter your API key.")
		return
	}
	p, ok, err := u.cfg.Keys.Principal(r.Context(), key)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if !ok {
		again(http.StatusUnauthorized, "That API key is not known here (or it was revoked). Check it and try again.")
		return
	}
	token, _, err := u.svc.StartWebSession(r.Context(), p, u.cfg.Session)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", MaxAge: int(u.cfg.Session.Max.Seconds()),
		HttpOnly: true, Secure: u.overTLS(r), SameSite: http.SameSiteStrictMode})
	clearCookie(w, signInCookie, "/ui/signin", u.overTLS(r))
	http.Redirect(w, r, "/ui/jobs", http.StatusSeeOther)
}

// SignOut ends the session and clears its cookie.
func (u *UI) SignOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if err := u.svc.EndWebSession(r.Context(), c.Value); err != nil {
			u.fail(w, r, err)
			return
		}
	}
	clearCookie(w, sessionCookie, "/", u.overTLS(r))
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}

func clearCookie(w http.ResponseWriter, name, path string, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
}

// lifetime says a session's lifetime exactly: "8 h", "90 min".
func lifetime(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.Itoa(int(d/time.Hour)) + " h"
	}
	return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + " min"
}
