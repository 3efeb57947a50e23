package jobs

// The platform's own API: the connect flow (OAuth 2.0 authorization code
// with PKCE and state), member sync jobs (task platform:sync, one row per
// connected member, each read with that member's own token), and the
// scheduler's platform step (dispatch of due sync chunks, token refresh,
// expiry made loud).
//
// Member sync jobs live in the jobs and job_rows tables like vendor jobs,
// but their chunks are dispatched from platform_sync_chunks as platform:sync
// tasks, so the vendor pipeline (enrich:chunk) never sees their rows.

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/secretbox"
	"github.com/enrichq/enrichq/internal/store"
)

// TypePlatformSync is the task type of "sync chunk K of member sync job J".
const TypePlatformSync = "platform:sync"

// PlatformSyncTaskID is the deterministic asynq task id of a member sync chunk.
func PlatformSyncTaskID(ref store.ChunkRef) string {
	return fmt.Sprintf("platform:%s:%d", ref.JobID, ref.Chunk)
}

// NewPlatformSyncTask builds the task of a member sync chunk (ids, never data).
func NewPlatformSyncTask(ref store.ChunkRef) *asynq.Task {
	b, _ := json.Marshal(ChunkPayload{JobID: ref.JobID, Chunk: ref.Chunk})
	return asynq.NewTask(TypePlatformSync, b)
}

// PlatformConfig configures a [Platform]. Client, OAuth and Box are
// required; zero values of the others take the defaults.
type PlatformConfig struct {
	// Client reads /rest/me (its version was validated when it was built).
	Client *enrich.PlatformClient
	// OAuth is the connect flow's configuration (enrich.NewPlatformOAuth).
	OAuth *oauth2.Config
	// Box encrypts tokens and PKCE verifiers at rest.
	Box *secretbox.Box
	// HTTPClient calls the token endpoint. Default: a client with a
	// defaultPlatformTimeout timeout.
	HTTPClient *http.Client
	// ChunkSize is the members per sync task. Default DefaultChunkSize.
	ChunkSize int
	// Concurrency is the /rest/me calls in flight per chunk. Default 4.
	Concurrency int
	// Lease, MaxAttempts, RetryBase and RetryMax: as for vendor chunks
	// (same defaults). Only transient failures count attempts.
	Lease       time.Duration
	MaxAttempts int
	RetryBase   time.Duration
	RetryMax    time.Duration
	// QuotaJitter spreads the rows parked by a 429 over this much time after
	// the next midnight UTC (plus one second). Default 5m.
	QuotaJitter time.Duration
	// StateTTL is how long a connect request (state, PKCE verifier) stays
	// valid. Default 10m.
	StateTTL time.Duration
	// ExpiryWindow: members whose connection ends within it are reported
	// (logs, GET /v1/platform/members?expiring_within=) and their tokens
	// refreshed when a refresh token is held. Default DefaultExpiryWindow.
	ExpiryWindow time.Duration
	// Rewarn is how often the same member's coming expiry is logged again. Default 24h.
	Rewarn time.Duration
	// Recheck is how long a chunk handed to the queue is trusted to be there. Default DefaultRecheck.
	Recheck time.Duration
	// Batch caps the chunks and members one sweep handles. Default 1000.
	Batch int
	// Now and Rand are injectable for tests: due times, token lives and
	// midnight UTC run on Now.
	Now  func() time.Time
	Rand func() float64
}

// defaultPlatformTimeout bounds one call to the platform.
const defaultPlatformTimeout = 30 * time.Second

// DefaultExpiryWindow: members whose connection ends within it are reported
// and refreshed, by default.
const DefaultExpiryWindow = 7 * 24 * time.Hour

func (c *PlatformConfig) fill() {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: defaultPlatformTimeout}
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.QuotaJitter <= 0 {
		c.QuotaJitter = 5 * time.Minute
	}
	if c.StateTTL <= 0 {
		c.StateTTL = 10 * time.Minute
	}
	if c.ExpiryWindow <= 0 {
		c.ExpiryWindow = DefaultExpiryWindow
	}
	if c.Rewarn <= 0 {
		c.Rewarn = 24 * time.Hour
	}
	if c.Recheck <= 0 {
		c.Recheck = DefaultRecheck
	}
	if c.Batch <= 0 {
		c.Batch = 1000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// Platform runs everything of the platform's own API: connect flow, member
// sync jobs and the scheduler's platform step.
type Platform struct {
	store *store.Store
	enq   *Enqueuer
	cfg   PlatformConfig
	log   *slog.Logger
}

// NewPlatform builds a Platform. Without a Box (no encryption key) it
// refuses: tokens are never stored in the clear. enq may be nil where
// nothing is enqueued (the worker).
func NewPlatform(st *store.Store, enq *Enqueuer, cfg PlatformConfig, log *slog.Logger) (*Platform, error) {
	switch {
	case cfg.Box == nil:
		return nil, errors.New("jobs: platform: an encryption key for member tokens is required (ENRICHQ_PLATFORM_TOKEN_KEY)")
	case cfg.Client == nil:
		return nil, errors.New("jobs: platform: a platform client is required")
	case cfg.OAuth == nil:
		return nil, errors.New("jobs: platform: the OAuth configuration is required")
	}
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	return &Platform{store: st, enq: enq, cfg: cfg, log: log}, nil
}

// ExpiryWindow is the configured window of expiry reports.
func (p *Platform) ExpiryWindow() time.Duration { return p.cfg.ExpiryWindow }

// ---- tokens at rest ----

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

func (p *Platform) sealToken(tenant, memberID string, tok *oauth2.Token, life enrich.PlatformTokenLife, now time.Time, refreshExpiry *time.Time) (store.PlatformToken, error) {
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

// ---- the connect flow ----

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
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
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
		pe, _ := enrich.AsPlatformError(err)
		ce := &ConnectError{Upstream: true, Code: "platform_error", Message: "reading the member's profile failed: " + err.Error(), Err: err}
		if pe != nil {
			ce.Code, ce.Message = pe.Class.String(), "reading the member's profile failed: "+pe.Message
			ce.Upstream = pe.Class == enrich.PlatformTransient || pe.StopsApp() || pe.Class == enrich.PlatformQuota
		}
		return store.PlatformMember{}, ce
	}
	life := enrich.PlatformTokenLifeOf(tok, now)
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

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---- token refresh ----

// refreshOutcome is the result of refreshing a member's token.
type refreshOutcome struct {
	member store.PlatformMember // as stored afterwards
	token  sealedToken          // the usable token, when member is active
}

// refresh renews a member's access token with its refresh token, under the
// member's row lock (a concurrent refresh is waited for and reused). A
// refusal (invalid_grant, no refresh token) marks the member needs_reauth;
// a failure of the platform is returned as an error and changes nothing.
func (p *Platform) refresh(ctx context.Context, m store.PlatformMember) (refreshOutcome, error) {
	var usable sealedToken
	cur, err := p.store.LockPlatformMember(ctx, m.ID, func(cur store.PlatformMember) (store.MemberUpdate, error) {
		if cur.Status != store.MemberActive {
			return store.MemberUpdate{}, nil
		}
		st, err := p.openToken(cur)
		if err != nil {
			return store.MemberUpdate{}, err
		}
		if cur.Token.IssuedAt.After(m.Token.IssuedAt) {
			usable = st // another worker refreshed it meanwhile
			return store.MemberUpdate{}, nil
		}
		if st.RefreshToken == "" {
			return store.MemberUpdate{NeedsReauth: "token expired and no refresh token is held; the member must reconnect"}, nil
		}
		now := p.cfg.Now()
		nt, err := p.cfg.OAuth.TokenSource(p.oauthContext(ctx), &oauth2.Token{RefreshToken: st.RefreshToken}).Token()
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
				return store.MemberUpdate{NeedsReauth: "token refresh refused (" + retrieveErrorText(re) + "); the member must reconnect"}, nil
			}
			return store.MemberUpdate{}, fmt.Errorf("token refresh: %w", err)
		}
		life := enrich.PlatformTokenLifeOf(nt, now)
		var keep *time.Time
		if nt.RefreshToken == st.RefreshToken {
			keep = cur.Token.RefreshExpiresAt
		}
		pt, err := p.sealToken(cur.Tenant, cur.MemberID, nt, life, now, keep)
		if err != nil {
			return store.MemberUpdate{}, err
		}
		usable = sealedToken{AccessToken: nt.AccessToken, TokenType: nt.TokenType, RefreshToken: nt.RefreshToken, Expiry: life.Expiry}
		return store.MemberUpdate{Token: &pt}, nil
	})
	if err != nil {
		return refreshOutcome{member: cur}, err
	}
	if cur.Status == store.MemberActive && usable.AccessToken == "" {
		// Active, not refreshed by anyone, and nothing to do: the stored token stands.
		st, err := p.openToken(cur)
		if err != nil {
			return refreshOutcome{member: cur}, err
		}
		usable = st
	}
	return refreshOutcome{member: cur, token: usable}, nil
}

// ---- member sync jobs ----

// SyncRequest asks for a member sync job.
type SyncRequest struct {
	Tenant string
	Name   string
	// Members are member ids (enrichq's or the platform's) of the tenant;
	// ignored with All.
	Members        []string
	All            bool
	IdempotencyKey string
}

// SubmitSync stores a member sync job and enqueues its first chunks. A
// member that looks like a profile URL is a cold lookup: refused with an
// error matching enrich.ErrColdLookup before anything is stored or called.
// Unknown members are a *store.UnknownMembersError, none at all
// store.ErrNoMembers.
func (p *Platform) SubmitSync(ctx context.Context, req SyncRequest) (store.Job, bool, error) {
	if !req.All {
		if err := GuardMembers(req.Members); err != nil {
			return store.Job{}, false, err
		}
		if len(req.Members) == 0 {
			return store.Job{}, false, store.ErrNoMembers
		}
	}
	job, created, err := p.store.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: req.Tenant, Name: req.Name,
		Members: req.Members, All: req.All, IdempotencyKey: req.IdempotencyKey, ChunkSize: p.cfg.ChunkSize})
	if err != nil || !created {
		return job, created, err
	}
	p.log.Info("member sync submitted", "job_id", job.ID, "tenant", job.Tenant, "members", job.TotalRows, "chunks", job.ChunkCount)
	if p.enq != nil {
		var done []int
		for c := 0; c < job.ChunkCount && c < 200; c++ {
			if err := p.enqueue(ctx, store.ChunkRef{JobID: job.ID, Chunk: c}); err != nil {
				p.log.Warn("enqueue failed; the scheduler will enqueue the job", "job_id", job.ID, "chunk", c, "err", err)
				break
			}
			done = append(done, c)
		}
		if len(done) > 0 {
			if err := p.store.MarkPlatformChunksEnqueued(context.WithoutCancel(ctx), job.ID, done); err != nil {
				p.log.Warn("mark enqueued failed", "job_id", job.ID, "err", err)
			}
		}
	}
	return job, true, nil
}

// GuardMembers refuses, before any call, member references that are profile
// URLs: the platform has no lookup of a third party's profile.
func GuardMembers(refs []string) error {
	for _, r := range refs {
		if enrich.LooksLikeProfileURL(r) {
			return enrich.ColdLookupError(r)
		}
	}
	return nil
}

// enqueue hands one member sync chunk to the queue, like Enqueuer.Enqueue.
func (p *Platform) enqueue(ctx context.Context, ref store.ChunkRef) error {
	id := PlatformSyncTaskID(ref)
	opts := []asynq.Option{asynq.Queue(p.enq.Queue), asynq.TaskID(id), asynq.MaxRetry(20), asynq.Timeout(30 * time.Minute)}
	_, err := p.enq.Client.EnqueueContext(ctx, NewPlatformSyncTask(ref), opts...)
	if !errors.Is(err, asynq.ErrTaskIDConflict) {
		return err
	}
	info, ierr := p.enq.Inspector.GetTaskInfo(p.enq.Queue, id)
	if ierr != nil || info.State != asynq.TaskStateArchived {
		return nil
	}
	if derr := p.enq.Inspector.DeleteTask(p.enq.Queue, id); derr != nil && !errors.Is(derr, asynq.ErrTaskNotFound) {
		return derr
	}
	_, err = p.enq.Client.EnqueueContext(ctx, NewPlatformSyncTask(ref), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}

// HandleSync is the asynq handler of TypePlatformSync.
func (p *Platform) HandleSync(ctx context.Context, t *asynq.Task) error {
	var pl ChunkPayload
	if err := json.Unmarshal(t.Payload(), &pl); err != nil || pl.JobID == "" || pl.Chunk < 0 {
		return fmt.Errorf("bad %s payload %q: %w", TypePlatformSync, t.Payload(), errors.Join(err, asynq.SkipRetry))
	}
	retryIn, err := p.ProcessSync(ctx, store.ChunkRef{JobID: pl.JobID, Chunk: pl.Chunk})
	if err != nil {
		return err
	}
	if retryIn > 0 {
		return &RetryLater{In: retryIn}
	}
	return nil
}

// shortWait: a transient retry due sooner than this brings its task back
// through asynq; later ones, and rows parked until midnight UTC, are the
// scheduler's (it hands a chunk out again once a row of it is due).
const shortWait = 10 * time.Minute

// syncResult is what happened to one row.
type syncResult struct {
	out     store.SyncOutcome
	release bool                  // not done: back to pending
	stop    *enrich.PlatformError // the whole job must stop (400, 426)
	keyErr  bool                  // tokens do not open: the job must stop
}

// ProcessSync syncs one chunk of a member sync job. It returns a positive
// duration when rows of the chunk wait for a short retry.
func (p *Platform) ProcessSync(ctx context.Context, ref store.ChunkRef) (time.Duration, error) {
	job, err := p.store.GetJob(ctx, "", ref.JobID)
	if errors.Is(err, store.ErrNotFound) {
		p.log.Warn("member sync chunk of an unknown job dropped", "job_id", ref.JobID, "chunk", ref.Chunk)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !job.State.Runnable() {
		return 0, nil
	}
	claim, err := p.store.ClaimPlatformChunk(ctx, ref.JobID, ref.Chunk, p.cfg.Lease, p.cfg.Now())
	if err != nil {
		return 0, err
	}
	if len(claim.Rows) == 0 {
		return 0, nil // rows due later are the scheduler's to hand out again
	}
	if err := p.store.StartJob(ctx, job.ID); err != nil {
		return 0, err
	}
	stopBeat := p.heartbeat(ctx, claim)
	defer stopBeat()

	results := make([]syncResult, len(claim.Rows))
	var (
		mu      sync.Mutex
		stopped *enrich.PlatformError
		keyErr  bool
		wg      sync.WaitGroup
		sem     = make(chan struct{}, p.cfg.Concurrency)
	)
	halted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopped != nil || keyErr
	}
	for i, row := range claim.Rows {
		if halted() || ctx.Err() != nil {
			results[i] = syncResult{out: store.SyncOutcome{RowID: row.ID}, release: true}
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if halted() {
				results[i] = syncResult{out: store.SyncOutcome{RowID: row.ID}, release: true}
				return
			}
			r := p.syncRow(ctx, row)
			mu.Lock()
			if r.stop != nil && stopped == nil {
				stopped = r.stop
			}
			keyErr = keyErr || r.keyErr
			mu.Unlock()
			results[i] = r
		}()
	}
	wg.Wait()

	var outs []store.SyncOutcome
	var release []int64
	parked, parkedUntil := 0, time.Time{}
	var retryIn time.Duration // the soonest transient retry, if within shortWait
	now := p.cfg.Now()
	for _, r := range results {
		if r.release || r.stop != nil || r.keyErr {
			release = append(release, r.out.RowID)
			continue
		}
		outs = append(outs, r.out)
		switch {
		case r.out.State != domain.RowRetryWait:
		case !r.out.FailedAttempt: // parked until the quotas reset: the scheduler's
			parked++
			if r.out.NextAttemptAt.After(parkedUntil) {
				parkedUntil = r.out.NextAttemptAt
			}
		default:
			if d := max(r.out.NextAttemptAt.Sub(now), 10*time.Millisecond); d <= shortWait && (retryIn == 0 || d < retryIn) {
				retryIn = d
			}
		}
	}
	sctx := context.WithoutCancel(ctx)
	if _, err := p.store.SavePlatformOutcomes(sctx, claim.Token, outs); err != nil {
		return 0, err
	}
	if len(release) > 0 {
		if err := p.store.ReleaseRows(sctx, claim.Token, release); err != nil {
			return 0, err
		}
	}
	if parked > 0 {
		p.log.Warn("platform daily quota reached: rows parked until after midnight UTC", "job_id", job.ID, "chunk", ref.Chunk,
			"rows", parked, "until", parkedUntil.UTC())
	}
	reason := ""
	switch {
	case stopped != nil:
		reason = stopped.Message
	case keyErr:
		reason = errTokenKey.Error()
	}
	if reason != "" {
		if ok, err := p.store.PauseJob(sctx, job.ID, reason); err != nil {
			return 0, err
		} else if ok {
			p.log.Error("member sync paused", "job_id", job.ID, "reason", reason)
		}
		return 0, nil
	}
	if _, err := p.store.FinishJobs(sctx, job.ID); err != nil {
		return 0, err
	}
	return retryIn, nil
}

// heartbeat extends the claim's lease until the returned func is called.
func (p *Platform) heartbeat(ctx context.Context, claim store.PlatformClaim) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(p.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := p.store.ExtendLease(ctx, claim.Token, claim.IDs(), p.cfg.Lease, claimTTL(p.cfg.Lease)); err != nil && ctx.Err() == nil {
					p.log.Warn("lease extension failed", "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Reasons of failed member rows.
const reasonReconnect = "member needs to reconnect (GET /v1/platform/connect): "

// syncRow reads one member's profile with their own token and decides the
// row's outcome.
func (p *Platform) syncRow(ctx context.Context, row store.SyncRow) syncResult {
	res := syncResult{out: store.SyncOutcome{RowID: row.ID}}
	failed := func(reason string) syncResult {
		res.out.State, res.out.Reason, res.out.LastError = domain.RowFailed, reason, reason
		return res
	}
	m := row.Member
	if m == nil {
		return failed("the member is no longer connected")
	}
	if m.Status != store.MemberActive {
		return failed(reasonReconnect + m.StatusReason)
	}
	tok, err := p.openToken(*m)
	if err != nil {
		res.keyErr = true
		return res
	}
	now := p.cfg.Now()
	refreshed := false
	if m.Token.ExpiresAt != nil && !now.Before(*m.Token.ExpiresAt) {
		// Expired by its own clock: refresh it, or make it loud without a call.
		r, res2, done := p.refreshForRow(ctx, row, *m, res)
		if done {
			return res2
		}
		m, tok, refreshed = &r.member, r.token, true
	}
	prof, err := p.cfg.Client.Me(ctx, tok.AccessToken)
	if pe, ok := enrich.AsPlatformError(err); ok && pe.Class == enrich.PlatformTokenInvalid && m.Token.Refreshable && !refreshed {
		// The token may have ended sooner than it said: one refresh, one more try.
		r, res2, done := p.refreshForRow(ctx, row, *m, res)
		if done {
			return res2
		}
		m, tok = &r.member, r.token
		prof, err = p.cfg.Client.Me(ctx, tok.AccessToken)
	}
	if err == nil {
		if prof.ID != m.MemberID {
			return failed(fmt.Sprintf("the token answered for another member (%s, not %s)", clipText(prof.ID, 100), m.MemberID))
		}
		res.out.State = domain.RowMatched
		res.out.MemberID = m.ID
		res.out.FetchedAt = p.cfg.Now()
		res.out.Profile = &store.ProfileResult{Name: prof.Name, Headline: prof.Headline, Raw: prof.Raw}
		return res
	}
	pe, ok := enrich.AsPlatformError(err)
	if !ok {
		pe = &enrich.PlatformError{Class: enrich.PlatformTransient, Message: clipText(err.Error(), 300), Err: err}
	}
	switch {
	case pe.StopsApp():
		res.stop = pe
		return res
	case pe.Class == enrich.PlatformQuota:
		// Both daily quotas reset at midnight UTC: retry just after it,
		// never sooner (a short backoff would burn what is left of the day).
		jitter := time.Second + time.Duration(p.cfg.Rand()*float64(p.cfg.QuotaJitter))
		res.out.State = domain.RowRetryWait
		res.out.NextAttemptAt = enrich.NextQuotaReset(now).Add(jitter)
		res.out.LastError = pe.Message
		return res
	case pe.Class == enrich.PlatformTokenInvalid:
		reason := pe.Message
		if changed, err := p.store.MarkMemberNeedsReauth(context.WithoutCancel(ctx), m.ID, reason); err != nil {
			return p.transient(res, row, "marking the member needs_reauth: "+err.Error())
		} else if changed {
			p.log.Warn("platform member needs to reconnect", "tenant", m.Tenant, "member", m.ID, "reason", reason)
		}
		return failed(reasonReconnect + reason)
	case pe.Class == enrich.PlatformScope, pe.Class == enrich.PlatformRejected, pe.Class == enrich.PlatformColdLookup:
		return failed(pe.Message)
	default:
		return p.transient(res, row, pe.Error())
	}
}

// refreshForRow refreshes a member's token for a sync row. done is true when
// the row's outcome is decided (failed: needs_reauth; retry: the platform
// failed; stop: tokens do not open).
func (p *Platform) refreshForRow(ctx context.Context, row store.SyncRow, m store.PlatformMember, res syncResult) (refreshOutcome, syncResult, bool) {
	r, err := p.refresh(ctx, m)
	switch {
	case errors.Is(err, errTokenKey):
		res.keyErr = true
		return r, res, true
	case err != nil:
		return r, p.transient(res, row, err.Error()), true
	case r.member.Status != store.MemberActive:
		p.log.Warn("platform member needs to reconnect", "tenant", m.Tenant, "member", m.ID, "reason", r.member.StatusReason)
		res.out.State, res.out.Reason = domain.RowFailed, reasonReconnect+r.member.StatusReason
		res.out.LastError = res.out.Reason
		return r, res, true
	}
	return r, res, false
}

// transient is a failure worth retrying: retry_wait with backoff, or failed
// once the attempts are used up.
func (p *Platform) transient(res syncResult, row store.SyncRow, msg string) syncResult {
	res.out.LastError = msg
	res.out.FailedAttempt = true
	if row.Attempts+1 >= p.cfg.MaxAttempts {
		res.out.State, res.out.Reason = domain.RowFailed, "attempts exhausted: "+msg
		return res
	}
	res.out.State = domain.RowRetryWait
	res.out.NextAttemptAt = p.cfg.Now().Add(max(ratelimit.Backoff(row.Attempts, p.cfg.RetryBase, p.cfg.RetryMax, p.cfg.Rand), 10*time.Millisecond))
	return res
}

// ---- the scheduler's platform step ----

// PlatformSweepStats is what one platform sweep did.
type PlatformSweepStats struct {
	ChunksEnqueued int
	Refreshed      int
	Expired        int
	Warned         int
}

// Sweep is the scheduler's platform step: it hands due member sync chunks to
// the queue, refreshes tokens close to expiry where a refresh token is held,
// marks members whose connection ended needs_reauth, and logs members whose
// connection ends within the expiry window.
func (p *Platform) Sweep(ctx context.Context) (PlatformSweepStats, error) {
	var st PlatformSweepStats
	now := p.cfg.Now()
	if p.enq != nil {
		due, err := p.store.PlatformChunksToEnqueue(ctx, now, p.cfg.Recheck, p.cfg.Batch)
		if err != nil {
			return st, err
		}
		for _, ref := range due {
			if err := p.enqueue(ctx, ref); err != nil {
				return st, err
			}
			st.ChunksEnqueued++
		}
	}
	var err error
	st.Refreshed, st.Expired, st.Warned, err = p.SweepTokens(ctx)
	if err != nil {
		return st, err
	}
	if _, err := p.store.DeleteExpiredConnectStates(ctx, now); err != nil {
		return st, err
	}
	return st, nil
}

// SweepTokens makes token expiry loud: it refreshes tokens due for renewal,
// marks members whose connection ended needs_reauth, and logs (once per
// Rewarn) members whose connection ends within the window.
func (p *Platform) SweepTokens(ctx context.Context) (refreshed, expired, warned int, err error) {
	now := p.cfg.Now()
	due, err := p.store.MembersToRefresh(ctx, now, p.cfg.ExpiryWindow, p.cfg.Batch)
	if err != nil {
		return 0, 0, 0, err
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
			refreshed++
			p.log.Info("platform token refreshed", "tenant", m.Tenant, "member", m.ID, "token_expires_at", r.member.Token.ExpiresAt)
		}
	}
	gone, err := p.store.ExpireMembers(ctx, now, p.cfg.Batch)
	if err != nil {
		return refreshed, 0, 0, err
	}
	for _, m := range gone {
		p.log.Warn("platform member needs to reconnect: token expired", "tenant", m.Tenant, "member", m.ID,
			"platform_member_id", m.MemberID, "reason", m.StatusReason)
	}
	soon, err := p.store.MembersToWarn(ctx, now, p.cfg.ExpiryWindow, p.cfg.Rewarn, p.cfg.Batch)
	if err != nil {
		return refreshed, len(gone), 0, err
	}
	for _, m := range soon {
		ends := m.ConnectionEndsAt()
		p.log.Warn("platform token expires soon; the member must reconnect before then", "tenant", m.Tenant, "member", m.ID,
			"platform_member_id", m.MemberID, "name", m.Name, "expires_at", ends.UTC(), "expires_in", ends.Sub(now).Round(time.Minute),
			"refreshable", m.Token.Refreshable)
	}
	return refreshed, len(gone), len(soon), nil
}

// ConnectTTL is how long a connect request stays valid.
func (p *Platform) ConnectTTL() time.Duration { return p.cfg.StateTTL }

// PlatformSettings is what a binary knows of the platform, as plain
// values: its API, the OAuth app, the key of member tokens, and the tuning
// its member syncs share with vendor chunks (zero: the defaults).
type PlatformSettings struct {
	URL, Version           string
	AuthURL, TokenURL      string
	ClientID, ClientSecret string
	RedirectURL            string
	TokenKey               string // 32-byte keys, comma-separated; the first seals
	ExpiryWindow           time.Duration
	Timeout                time.Duration // of one call to the platform; default 30s
	ChunkSize, MaxAttempts int
	Lease                  time.Duration
}

// OpenPlatform builds the Platform of a binary from its settings: the
// version is validated before any call, and member tokens are never
// handled without the encryption key. enq is nil in the worker.
func OpenPlatform(st *store.Store, enq *Enqueuer, s PlatformSettings, log *slog.Logger) (*Platform, error) {
	httpClient := &http.Client{Timeout: cmp.Or(s.Timeout, defaultPlatformTimeout)}
	client, err := enrich.NewPlatformClient(enrich.PlatformConfig{BaseURL: s.URL, Version: s.Version,
		HTTPClient: httpClient, UserAgent: "enrichq"})
	if err != nil {
		return nil, err
	}
	oauth, err := enrich.NewPlatformOAuth(enrich.PlatformOAuthConfig{AuthURL: s.AuthURL, TokenURL: s.TokenURL,
		ClientID: s.ClientID, ClientSecret: s.ClientSecret, RedirectURL: s.RedirectURL})
	if err != nil {
		return nil, err
	}
	keys, err := secretbox.ParseKeys(s.TokenKey)
	if err != nil {
		return nil, fmt.Errorf("configuration: ENRICHQ_PLATFORM_TOKEN_KEY: %w", err)
	}
	box, err := secretbox.New(keys...)
	if err != nil {
		return nil, fmt.Errorf("configuration: ENRICHQ_PLATFORM_TOKEN_KEY: %w", err)
	}
	return NewPlatform(st, enq, PlatformConfig{Client: client, OAuth: oauth, Box: box, HTTPClient: httpClient,
		ChunkSize: s.ChunkSize, Lease: s.Lease, MaxAttempts: s.MaxAttempts, ExpiryWindow: s.ExpiryWindow, Recheck: DefaultRecheck}, log)
}
