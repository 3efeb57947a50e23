package platform

// Member tokens: sealed at rest (bound to their tenant and member), renewed
// with the refresh token under a claim of the member (never a transaction
// held across the call), and their expiry made loud by the token sweep.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/store"
)

// sealedToken is the plaintext of platform_members.token.
type sealedToken struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// tokenAAD binds a sealed token to its tenant and member: copied to another
// row, it does not open.
func tokenAAD(tenant, memberID string) []byte {
	return []byte("enrichq/platform-token/v1\x00" + tenant + "\x00" + memberID)
}

func verifierAAD(tenant string) []byte { return []byte("enrichq/platform-pkce/v1\x00" + tenant) }

// errTokenKey: a stored token does not open with the configured keys. That is
// the application's configuration, not the member's doing: the job pauses.
var errTokenKey = errors.New("a stored member token cannot be decrypted: check ENRICHQ_PLATFORM_TOKEN_KEY (an old key must stay listed after the new one until tokens are sealed again)")

func (p *Platform) sealToken(tenant, memberID string, tok *oauth2.Token, life platformapi.TokenLife, now time.Time, refreshExpiry *time.Time) (store.PlatformToken, error) {
	st := sealedToken{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: life.Expiry}
	b, err := json.Marshal(st)
	if err != nil {
		return store.PlatformToken{}, err
	}
	sealed, err := p.cfg.Box.Seal(b, tokenAAD(tenant, memberID))
	if err != nil {
		return store.PlatformToken{}, err
	}
	t := store.PlatformToken{Sealed: sealed, IssuedAt: now, Refreshable: tok.RefreshToken != "", Scopes: life.Scopes}
	if !life.Expiry.IsZero() {
		e := life.Expiry
		t.ExpiresAt = &e
	}
	switch {
	case !life.RefreshExpiry.IsZero():
		e := life.RefreshExpiry
		t.RefreshExpiresAt = &e
	case t.Refreshable:
		t.RefreshExpiresAt = refreshExpiry
	}
	return t, nil
}

func (p *Platform) openToken(m store.PlatformMember) (sealedToken, error) {
	var st sealedToken
	b, err := p.cfg.Box.Open(m.Token.Sealed, tokenAAD(m.Tenant, m.MemberID))
	if err != nil {
		return st, errTokenKey
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, errTokenKey
	}
	return st, nil
}

func (p *Platform) oauthContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, p.cfg.HTTPClient)
}

// refreshOutcome is the result of refreshing a member's token.
type refreshOutcome struct {
	member store.PlatformMember // as stored afterwards
	token  sealedToken          // the usable token, when member is active
}

// refreshPoll is how often a refresh that found another one under way looks
// at the member again.
const refreshPoll = 50 * time.Millisecond

// refreshLease is how long a refresh claim holds: the token call's timeout
// and a margin. A refresher lost mid-call gives the member up after it.
func (p *Platform) refreshLease() time.Duration {
	return max(p.cfg.HTTPClient.Timeout, DefaultTimeout) + 30*time.Second
}

// refresh renews a member's access token with its refresh token. The
// refresh is claimed in the database for a while (a concurrent refresh is
// waited for and its token used: a refresh token is spent once), and no
// transaction is open while the platform is called: the claim, and the
// write of the new token, are short statements of their own. A refusal
// (invalid_grant, no refresh token) marks the member needs_reauth; a
// failure of the platform is returned as an error and changes nothing.
func (p *Platform) refresh(ctx context.Context, m store.PlatformMember) (refreshOutcome, error) {
	for {
		cur, claim, err := p.store.ClaimMemberRefresh(ctx, m.ID, p.refreshLease())
		if err != nil {
			return refreshOutcome{member: cur}, err
		}
		if cur.Status != store.MemberActive {
			return refreshOutcome{member: cur}, nil
		}
		if cur.Token.IssuedAt.After(m.Token.IssuedAt) {
			// Another refresher renewed it meanwhile: use its token.
			if claim != "" {
				if cur, err = p.store.FinishMemberRefresh(ctx, m.ID, claim, store.MemberUpdate{}); err != nil {
					return refreshOutcome{member: cur}, err
				}
			}
			st, err := p.openToken(cur)
			return refreshOutcome{member: cur, token: st}, err
		}
		if claim == "" {
			select { // another refresher is calling the platform
			case <-ctx.Done():
				return refreshOutcome{member: cur}, ctx.Err()
			case <-time.After(refreshPoll):
			}
			continue
		}
		u, usable, err := p.renew(ctx, cur)
		if err != nil {
			if _, ferr := p.store.FinishMemberRefresh(context.WithoutCancel(ctx), m.ID, claim, store.MemberUpdate{}); ferr != nil {
				p.log.Warn("platform token refresh claim not given up; it lapses", "member", m.ID, "err", ferr)
			}
			return refreshOutcome{member: cur}, err
		}
		cur, err = p.store.FinishMemberRefresh(ctx, m.ID, claim, u)
		if err != nil {
			return refreshOutcome{member: cur}, err
		}
		if cur.Status == store.MemberActive && usable.AccessToken == "" {
			if usable, err = p.openToken(cur); err != nil {
				return refreshOutcome{member: cur}, err
			}
		}
		return refreshOutcome{member: cur, token: usable}, nil
	}
}

// renew calls the platform's token endpoint with cur's refresh token and
// says what to store. It runs outside any transaction.
func (p *Platform) renew(ctx context.Context, cur store.PlatformMember) (store.MemberUpdate, sealedToken, error) {
	st, err := p.openToken(cur)
	if err != nil {
		return store.MemberUpdate{}, sealedToken{}, err
	}
	if st.RefreshToken == "" {
		return store.MemberUpdate{NeedsReauth: "token expired and no refresh token is held; the member must reconnect"}, sealedToken{}, nil
	}
	now := p.cfg.Now()
	nt, err := p.cfg.OAuth.TokenSource(p.oauthContext(ctx), &oauth2.Token{RefreshToken: st.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			return store.MemberUpdate{NeedsReauth: "token refresh refused (" + retrieveErrorText(re) + "); the member must reconnect"}, sealedToken{}, nil
		}
		return store.MemberUpdate{}, sealedToken{}, fmt.Errorf("token refresh: %w", err)
	}
	life := platformapi.TokenLifeOf(nt, now)
	var keep *time.Time
	if nt.RefreshToken == st.RefreshToken {
		keep = cur.Token.RefreshExpiresAt
	}
	pt, err := p.sealToken(cur.Tenant, cur.MemberID, nt, life, now, keep)
	if err != nil {
		return store.MemberUpdate{}, sealedToken{}, err
	}
	usable := sealedToken{AccessToken: nt.AccessToken, TokenType: nt.TokenType, RefreshToken: nt.RefreshToken, Expiry: life.Expiry}
	return store.MemberUpdate{Token: &pt}, usable, nil
}

// TokenSweepStats is what one token sweep did.
type TokenSweepStats struct {
	Refreshed int // tokens renewed with their refresh token
	Expired   int // members marked needs_reauth: their connection ended
	Warned    int // members whose connection ends within the window, logged
}

// SweepTokens makes token expiry loud: it refreshes tokens due for renewal,
// marks members whose connection ended needs_reauth, and logs (once per
// Rewarn) members whose connection ends within the window.
func (p *Platform) SweepTokens(ctx context.Context) (TokenSweepStats, error) {
	var st TokenSweepStats
	now := p.cfg.Now()
	due, err := p.store.MembersToRefresh(ctx, now, p.cfg.ExpiryWindow, p.cfg.Batch)
	if err != nil {
		return st, err
	}
	for _, m := range due {
		r, err := p.refresh(ctx, m)
		switch {
		case err != nil:
			p.log.Warn("platform token refresh failed; will try again", "tenant", m.Tenant, "member", m.ID,
				"token_expires_at", m.Token.ExpiresAt, "err", err)
		case r.member.Status != store.MemberActive:
			p.log.Warn("platform member needs to reconnect", "tenant", m.Tenant, "member", m.ID, "reason", r.member.StatusReason)
		default:
			st.Refreshed++
			p.log.Info("platform token refreshed", "tenant", m.Tenant, "member", m.ID, "token_expires_at", r.member.Token.ExpiresAt)
		}
	}
	gone, err := p.store.ExpireMembers(ctx, now, p.cfg.Batch)
	if err != nil {
		return st, err
	}
	st.Expired = len(gone)
	for _, m := range gone {
		p.log.Warn("platform member needs to reconnect: token expired", "tenant", m.Tenant, "member", m.ID,
			"platform_member_id", m.MemberID, "reason", m.StatusReason)
	}
	soon, err := p.store.MembersToWarn(ctx, now, p.cfg.ExpiryWindow, p.cfg.Rewarn, p.cfg.Batch)
	if err != nil {
		return st, err
	}
	st.Warned = len(soon)
	for _, m := range soon {
		ends := m.ConnectionEndsAt()
		p.log.Warn("platform token expires soon; the member must reconnect before then", "tenant", m.Tenant, "member", m.ID,
			"platform_member_id", m.MemberID, "name", m.Name, "expires_at", ends.UTC(), "expires_in", ends.Sub(now).Round(time.Minute),
			"refreshable", m.Token.Refreshable)
	}
	return st, nil
}
