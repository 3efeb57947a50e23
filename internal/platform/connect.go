package platform

// The connect flow: OAuth 2.0 authorization code with PKCE and state. The
// state and the sealed PKCE verifier wait in Postgres until the callback.

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/store"
)

// ErrConnectState: the callback's state is unknown (forged), already used,
// or expired. Nothing is exchanged.
var ErrConnectState = errors.New("unknown, already used or expired state: start again at GET /v1/platform/connect")

// ConnectError is a connect flow that could not complete after its state
// was accepted (the state is then used up).
type ConnectError struct {
	// Upstream: the platform failed (5xx, network, an unexpected answer),
	// rather than refusing this member's request.
	Upstream bool
	Code     string // consent_declined, invalid_callback, code_refused, platform_error, or the platform call's class
	Message  string
	Err      error
}

func (e *ConnectError) Error() string { return "platform connect: " + e.Message }
func (e *ConnectError) Unwrap() error { return e.Err }

func stateHash(state string) []byte {
	h := sha256.Sum256([]byte(state))
	return h[:]
}

// ConnectURL starts a connect flow for tenant: a fresh state and PKCE
// verifier are kept in Postgres (the verifier encrypted) until StateTTL, and
// the consent screen's URL is returned.
func (p *Platform) ConnectURL(ctx context.Context, tenant string) (string, error) {
	var b [32]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", err
	}
	state := base64.RawURLEncoding.EncodeToString(b[:])
	verifier := oauth2.GenerateVerifier()
	sealed, err := p.cfg.Box.Seal([]byte(verifier), verifierAAD(tenant))
	if err != nil {
		return "", err
	}
	now := p.cfg.Now()
	if err := p.store.SaveConnectState(ctx, stateHash(state), tenant, sealed, now, now.Add(p.cfg.StateTTL)); err != nil {
		return "", err
	}
	return p.cfg.OAuth.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), nil
}

// Callback is what the consent screen sent back to the redirect URL.
type Callback struct {
	State            string
	Code             string
	Error            string // "access_denied" when the member declined
	ErrorDescription string
}

// CompleteConnect finishes a connect flow: the state is taken (once) and
// names the tenant, the code is exchanged with the PKCE verifier, /rest/me
// is read once to learn who connected, and the token is stored encrypted
// with its expiry. An unknown, used or expired state is ErrConnectState.
func (p *Platform) CompleteConnect(ctx context.Context, cb Callback) (store.PlatformMember, error) {
	if cb.State == "" {
		return store.PlatformMember{}, ErrConnectState
	}
	now := p.cfg.Now()
	tenant, sealedVerifier, err := p.store.TakeConnectState(ctx, stateHash(cb.State), now)
	if errors.Is(err, store.ErrNotFound) {
		return store.PlatformMember{}, ErrConnectState
	}
	if err != nil {
		return store.PlatformMember{}, err
	}
	verifier, err := p.cfg.Box.Open(sealedVerifier, verifierAAD(tenant))
	if err != nil {
		return store.PlatformMember{}, &ConnectError{Code: "invalid_callback", Message: "the connect request cannot be read back: check ENRICHQ_PLATFORM_TOKEN_KEY", Err: err}
	}
	switch {
	case cb.Error != "":
		msg := "the member did not consent (" + clipText(cb.Error, 100) + ")"
		if cb.ErrorDescription != "" {
			msg += ": " + clipText(cb.ErrorDescription, 200)
		}
		return store.PlatformMember{}, &ConnectError{Code: "consent_declined", Message: msg}
	case cb.Code == "":
		return store.PlatformMember{}, &ConnectError{Code: "invalid_callback", Message: "the callback carries no code"}
	}
	tok, err := p.cfg.OAuth.Exchange(p.oauthContext(ctx), cb.Code, oauth2.VerifierOption(string(verifier)))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			return store.PlatformMember{}, &ConnectError{Code: "code_refused", Err: err,
				Message: "the platform refused the authorization code: " + retrieveErrorText(re)}
		}
		return store.PlatformMember{}, &ConnectError{Upstream: true, Code: "platform_error", Err: err,
			Message: "the platform's token endpoint failed: " + clipText(err.Error(), 300)}
	}
	if tok.AccessToken == "" {
		return store.PlatformMember{}, &ConnectError{Upstream: true, Code: "platform_error", Message: "the token answer has no access token"}
	}
	prof, err := p.cfg.Client.Me(ctx, tok.AccessToken)
	if err != nil {
		pe, _ := platformapi.AsError(err)
		ce := &ConnectError{Upstream: true, Code: "platform_error", Message: "reading the member's profile failed: " + err.Error(), Err: err}
		if pe != nil {
			ce.Code, ce.Message = pe.Class.String(), "reading the member's profile failed: "+pe.Message
			ce.Upstream = pe.Class == platformapi.ClassTransient || pe.StopsApp() || pe.Class == platformapi.ClassQuota
		}
		return store.PlatformMember{}, ce
	}
	life := platformapi.TokenLifeOf(tok, now)
	pt, err := p.sealToken(tenant, prof.ID, tok, life, now, nil)
	if err != nil {
		return store.PlatformMember{}, err
	}
	m, err := p.store.UpsertPlatformMember(ctx, store.ConnectedMember{Tenant: tenant, MemberID: prof.ID, Name: prof.Name,
		Email: prof.Email, Headline: prof.Headline, Profile: prof.Raw, Token: pt, At: now})
	if err != nil {
		return store.PlatformMember{}, err
	}
	p.log.Info("platform member connected", "tenant", tenant, "member", m.ID, "platform_member_id", m.MemberID,
		"token_expires_at", m.Token.ExpiresAt, "refreshable", m.Token.Refreshable)
	return m, nil
}

func retrieveErrorText(re *oauth2.RetrieveError) string {
	if re.ErrorCode == "" {
		return fmt.Sprintf("status %d", re.Response.StatusCode)
	}
	s := re.ErrorCode
	if re.ErrorDescription != "" {
		s += ": " + re.ErrorDescription
	}
	return clipText(s, 300)
}
