package platformtest

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"
)

func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, pw, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(pw)
	}
	if id != p.opts.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.opts.ClientSecret)) != 1 {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostForm.Get("code")]
		switch {
		case !ok:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
			return
		case g.used:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
			return
		case !now.Before(g.expires):
			tokenError(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
			return
		case r.PostForm.Get("redirect_uri") != g.redirect:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
			return
		}
		verifier := r.PostForm.Get("code_verifier")
		sum := sha256.Sum256([]byte(verifier))
		if verifier == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed: code_verifier does not match code_challenge")
			return
		}
		g.used = true
		p.issue(w, g.member, g.scopes, "", now)
	case "refresh_token":
		rt, ok := p.refresh[r.PostForm.Get("refresh_token")]
		if !ok || rt.revoked || !now.Before(rt.expires) {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is invalid, expired or revoked")
			return
		}
		p.issue(w, rt.member, rt.scopes, r.PostForm.Get("refresh_token"), now)
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// issue answers a token response; keepRefresh is the refresh token of a
// refresh grant (kept, with its remaining life), else a new one is minted.
func (p *Platform) issue(w http.ResponseWriter, member string, scopes []string, keepRefresh string, now time.Time) {
	access := "AQ" + random(24)
	p.access[access] = &accessToken{member: member, scopes: scopes, expires: now.Add(p.opts.AccessTokenTTL)}
	body := map[string]any{
		"access_token": access,
		"token_type":   "Bearer",
		"expires_in":   int64(p.opts.AccessTokenTTL / time.Second),
		"scope":        strings.Join(scopes, " "),
	}
	switch {
	case keepRefresh != "":
		body["refresh_token"] = keepRefresh
		body["refresh_token_expires_in"] = int64(p.refresh[keepRefresh].expires.Sub(now) / time.Second)
	case p.opts.RefreshTokenTTL > 0:
		rt := "AR" + random(24)
		p.refresh[rt] = &refreshToken{member: member, scopes: scopes, expires: now.Add(p.opts.RefreshTokenTTL)}
		body["refresh_token"] = rt
		body["refresh_token_expires_in"] = int64(p.opts.RefreshTokenTTL / time.Second)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, body)
}

func tokenError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}
