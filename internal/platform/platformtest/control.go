package platformtest

import (
	"slices"
	"time"
)

// AddMember registers a member (and returns it).
func (p *Platform) AddMember(m Member) Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members[m.ID] = m
	return m
}

// SignIn makes the member with this id the one who consents on the next visits
// of the consent screen.
func (p *Platform) SignIn(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signedIn = id
}

// Deny makes the consent screen refuse (error=access_denied) while on.
func (p *Platform) Deny(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny = on
}

// WithholdScopes makes the member untick these scopes on the consent screen.
func (p *Platform) WithholdScopes(scopes ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grantNot = scopes
}

// Revoke revokes every token (access and refresh) of a member.
func (p *Platform) Revoke(memberID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.access {
		if t.member == memberID {
			t.revoked = true
		}
	}
	for _, t := range p.refresh {
		if t.member == memberID {
			t.revoked = true
		}
	}
}

// DropScope takes a scope away from every token of a member (the member
// removed a permission in their settings).
func (p *Platform) DropScope(memberID, scope string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.access {
		if t.member == memberID {
			t.scopes = slices.DeleteFunc(slices.Clone(t.scopes), func(s string) bool { return s == scope })
		}
	}
}

// SetTokenTTL changes the life of the tokens issued from now on; refresh 0
// issues no refresh token.
func (p *Platform) SetTokenTTL(access, refresh time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.AccessTokenTTL, p.opts.RefreshTokenTTL = access, refresh
}

// ExpireAccess ends every access token of a member now, earlier than its
// stated life, leaving refresh tokens alone (the platform may end a token
// sooner than expires_in said).
func (p *Platform) ExpireAccess(memberID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.access {
		if t.member == memberID {
			t.revoked = true
		}
	}
}

// Retire adds versions to the retired list.
func (p *Platform) Retire(versions ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range versions {
		p.retired[v] = true
	}
}

// SetQuotas changes the daily quotas (0: no cap).
func (p *Platform) SetQuotas(app, member int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.appQuota, p.memQuota = app, member
}

// FailNext answers the next /rest/me calls (past the header checks) with
// these statuses, one each, e.g. 503.
func (p *Platform) FailNext(statuses ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, statuses...)
}

// Requests is the number of requests received on path ("" for every path).
func (p *Platform) Requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if path != "" {
		return p.requests[path]
	}
	n := 0
	for _, c := range p.requests {
		n += c
	}
	return n
}

// ProfilesServed is the number of /rest/me calls answered 200.
func (p *Platform) ProfilesServed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.profiles
}

// Stats is what the fake did, for the control endpoint.
type Stats struct {
	Requests       map[string]int `json:"requests"`
	ProfilesServed int            `json:"profiles_served"`
	QuotaDay       string         `json:"quota_day"`
	AppCalls       int            `json:"app_calls_today"`
	Members        int            `json:"members"`
	AccessTokens   int            `json:"access_tokens"`
}

// Stats returns a snapshot.
func (p *Platform) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rollDay()
	req := make(map[string]int, len(p.requests))
	for k, v := range p.requests {
		req[k] = v
	}
	return Stats{Requests: req, ProfilesServed: p.profiles, QuotaDay: p.day, AppCalls: p.appCalls, Members: len(p.members), AccessTokens: len(p.access)}
}

// IssueToken mints an access token (and a refresh token when refreshTTL > 0)
// for a member without the consent screen, with the given scopes and life.
func (p *Platform) IssueToken(memberID string, scopes []string, ttl, refreshTTL time.Duration) (access, refresh string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	access = "AQ" + random(24)
	p.access[access] = &accessToken{member: memberID, scopes: scopes, expires: now.Add(ttl)}
	if refreshTTL > 0 {
		refresh = "AR" + random(24)
		p.refresh[refresh] = &refreshToken{member: memberID, scopes: scopes, expires: now.Add(refreshTTL)}
	}
	return access, refresh
}
