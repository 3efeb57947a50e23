package platformtest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

func (p *Platform) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if q.Get("client_id") != p.opts.ClientID {
		pageError(w, http.StatusBadRequest, "unknown client_id")
		return
	}
	ru, err := url.Parse(redirect)
	if redirect == "" || err != nil || !ru.IsAbs() || (len(p.opts.RedirectURLs) > 0 && !slices.Contains(p.opts.RedirectURLs, redirect)) {
		pageError(w, http.StatusBadRequest, "redirect_uri is not one the app registered")
		return
	}
	back := func(v url.Values) {
		v.Set("state", q.Get("state"))
		u := *ru
		qs := u.Query()
		for k, vs := range v {
			qs[k] = vs
		}
		u.RawQuery = qs.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		back(url.Values{"error": {"unsupported_response_type"}})
		return
	case q.Get("state") == "":
		back(url.Values{"error": {"invalid_request"}, "error_description": {"state is required"}})
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		back(url.Values{"error": {"invalid_request"}, "error_description": {"PKCE with code_challenge_method S256 is required"}})
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	if !slices.Contains(scopes, "openid") {
		back(url.Values{"error": {"invalid_scope"}, "error_description": {"openid is required"}})
		return
	}
	if p.deny {
		back(url.Values{"error": {"access_denied"}, "error_description": {"the member declined"}})
		return
	}
	if _, ok := p.members[p.signedIn]; !ok {
		pageError(w, http.StatusUnauthorized, "no member is signed in to the fake platform (SignIn)")
		return
	}
	var granted []string
	for _, s := range scopes {
		if !slices.Contains(p.grantNot, s) {
			granted = append(granted, s)
		}
	}
	code := "AC" + random(24)
	p.codes[code] = &codeGrant{member: p.signedIn, redirect: redirect, challenge: q.Get("code_challenge"), scopes: granted,
		expires: p.opts.Now().Add(p.opts.CodeTTL)}
	back(url.Values{"code": {code}})
}

func pageError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Sign in</title><p>%s</p>\n", msg)
}
