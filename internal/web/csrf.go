package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

// A form that changes something carries a CSRF token in its "csrf" field:
// the session's own (kept server-side with it), or before sign-in the
// value of the signInCookie (double submit), so that another site can
// neither sign a person in under its key nor act in their session. The
// SameSite=Strict cookies are a second wall, not the only one.
const (
	csrfField    = "csrf"
	signInCookie = "enrichq_signin"
	// signInTokenAge is how long a sign-in form may be left open.
	signInTokenAge = 3600
)

// checkCSRF is true when got, the form's csrf field, is want; otherwise
// it has answered 403.
func (u *UI) checkCSRF(w http.ResponseWriter, r *http.Request, got, want string) bool {
	if want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
		return true
	}
	u.render(w, r, http.StatusForbidden, "error", page{Title: "Form expired",
		Data: "This form was not sent from this site's page, or it has expired. Go back, reload the page and send it again."})
	return false
}

// signInToken returns the sign-in form's token, setting its cookie when
// the browser holds none.
func (u *UI) signInToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(signInCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: token, Path: "/ui/signin", MaxAge: signInTokenAge,
		HttpOnly: true, Secure: u.overTLS(r), SameSite: http.SameSiteStrictMode})
	return token
}

// checkSignInCSRF checks the sign-in form's token against its cookie.
func (u *UI) checkSignInCSRF(w http.ResponseWriter, r *http.Request) bool {
	c, err := r.Cookie(signInCookie)
	want := ""
	if err == nil {
		want = c.Value
	}
	return u.checkCSRF(w, r, r.PostForm.Get(csrfField), want)
}
