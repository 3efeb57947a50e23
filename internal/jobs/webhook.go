package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/store"
)

// Webhook headers. The signature is HMAC-SHA256 with the shared secret over
// "<timestamp>.<body>", sent as "t=<unix seconds>,v1=<hex>"; a receiver
// recomputes it and rejects old timestamps (replays).
const (
	SignatureHeader = "Enrichq-Signature"
	EventHeader     = "Enrichq-Event"
	DeliveryHeader  = "Enrichq-Delivery"
)

// Sign returns the signature header value of body sent at ts.
func Sign(secret string, ts time.Time, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", ts.Unix(), hex.EncodeToString(mac(secret, ts.Unix(), body)))
}

func mac(secret string, unix int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", unix)
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks a signature header against body: the MAC must
// match and the timestamp be within tolerance of now.
func VerifySignature(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	var ts int64
	var sig []byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts, _ = strconv.ParseInt(v, 10, 64)
		case "v1":
			sig, _ = hex.DecodeString(v)
		}
	}
	if ts == 0 || sig == nil {
		return errors.New("webhook: malformed signature header")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	if !hmac.Equal(sig, mac(secret, ts, body)) {
		return errors.New("webhook: signature mismatch")
	}
	return nil
}

// WebhookConfig configures completion callbacks.
type WebhookConfig struct {
	// Secret signs every delivery. Required to send.
	Secret string
	// AllowPrivate allows callback URLs on loopback and private networks;
	// off, they are refused at submit and at connect.
	AllowPrivate bool
	// Timeout bounds one attempt. Default 10s.
	Timeout time.Duration
	// MaxAttempts before a delivery is failed for good. Default 10.
	MaxAttempts int
	// RetryBase and RetryMax shape the backoff between attempts. Default 10s and 1h.
	RetryBase, RetryMax time.Duration
	// Concurrency of deliveries in one sweep. Default 8.
	Concurrency int
}

func (c *WebhookConfig) fill() {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 10 * time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = time.Hour
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
}

// Webhooks sends completion callbacks recorded in Postgres.
type Webhooks struct {
	store  *store.Store
	cfg    WebhookConfig
	client *http.Client
	log    *slog.Logger
}

// NewWebhooks builds the sender. Its HTTP client refuses, at connect time,
// addresses on loopback and private networks unless AllowPrivate: a name
// that resolves there (or is rebound there later) is refused too.
func NewWebhooks(st *store.Store, cfg WebhookConfig, log *slog.Logger) *Webhooks {
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout}
	if !cfg.AllowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if !publicAddr(ap.Addr()) {
				return fmt.Errorf("callback address %s is on a loopback or private network", ap.Addr())
			}
			return nil
		}
	}
	transport := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: cfg.Timeout, MaxIdleConns: 16, IdleConnTimeout: time.Minute}
	client := &http.Client{
		Timeout:   cfg.Timeout,
		Transport: transport,
		// A redirect is not followed: the receiver said where it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Webhooks{store: st, cfg: cfg, client: client, log: log}
}

// publicAddr reports whether ip is a public unicast address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!netip.MustParsePrefix("100.64.0.0/10").Contains(ip) // carrier-grade NAT
}

// CheckCallbackURL refuses, at submit, a callback URL whose host is (or
// resolves to) a loopback or private address, unless allowPrivate. A name
// that does not resolve now is accepted: the connect-time check guards it.
func CheckCallbackURL(ctx context.Context, raw string, allowPrivate bool) error {
	if raw == "" || allowPrivate {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return fmt.Errorf("callback_url %s points at this machine", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !publicAddr(ip) {
			return fmt.Errorf("callback_url %s is a loopback or private address", host)
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return fmt.Errorf("callback_url %s resolves to %s, a loopback or private address", host, a)
		}
	}
	return nil
}

// WebhookPayload is the body of a job.finished callback.
type WebhookPayload struct {
	Event      string     `json:"event"`
	DeliveryID int64      `json:"delivery_id"`
	Job        WebhookJob `json:"job"`
}

// WebhookJob is the finished job as a callback describes it.
type WebhookJob struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	State       domain.JobState `json:"state"`
	StateReason string          `json:"state_reason"`
	Rows        map[string]int  `json:"rows"` // a count per row state, and "total"
	Credits     map[string]any  `json:"credits"`
	CreatedAt   time.Time       `json:"created_at"`
	FinishedAt  *time.Time      `json:"finished_at"`
	ResultsURL  string          `json:"results_path"`
}

// DeliverDue sends the deliveries that are due, concurrently, and records
// each attempt. It returns how many were delivered.
func (w *Webhooks) DeliverDue(ctx context.Context) (int, error) {
	if w.cfg.Secret == "" {
		return 0, nil
	}
	due, err := w.store.ClaimWebhookDeliveries(ctx, 100, w.cfg.Timeout+time.Minute)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	var mu sync.Mutex
	delivered := 0
	sem := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, d := range due {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if w.deliver(ctx, d) {
				mu.Lock()
				delivered++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return delivered, nil
}

func (w *Webhooks) deliver(ctx context.Context, d store.WebhookDelivery) bool {
	attempt := store.WebhookAttempt{}
	status, err := w.post(ctx, d)
	if status != 0 {
		attempt.Status = &status
	}
	if err == nil {
		attempt.Delivered = true
	} else {
		attempt.Error = err.Error()
		attempt.GiveUp = d.Attempts >= w.cfg.MaxAttempts
		attempt.RetryAt = time.Now().Add(ratelimit.Backoff(d.Attempts-1, w.cfg.RetryBase, w.cfg.RetryMax, rand.Float64) + w.cfg.RetryBase/2)
	}
	if rerr := w.store.RecordWebhookAttempt(context.WithoutCancel(ctx), d.ID, attempt); rerr != nil {
		w.log.Error("webhook record failed", "delivery_id", d.ID, "err", rerr)
	}
	if err != nil {
		w.log.Warn("webhook not delivered", "job_id", d.JobID, "delivery_id", d.ID, "attempt", d.Attempts, "give_up", attempt.GiveUp, "err", err)
	} else {
		w.log.Info("webhook delivered", "job_id", d.JobID, "delivery_id", d.ID, "attempt", d.Attempts, "status", status)
	}
	return err == nil
}

// post makes one attempt; a 2xx answer is success.
func (w *Webhooks) post(ctx context.Context, d store.WebhookDelivery) (int, error) {
	job, err := w.store.GetJob(ctx, "", d.JobID)
	if err != nil {
		return 0, fmt.Errorf("load job: %w", err)
	}
	counts, err := w.store.RowCounts(ctx, d.JobID)
	if err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	rows := make(map[string]int, len(counts)+1)
	for st, n := range counts {
		rows[string(st)] = n
	}
	rows["total"] = job.TotalRows
	body, err := json.Marshal(WebhookPayload{Event: d.Event, DeliveryID: d.ID, Job: WebhookJob{
		ID: job.ID, Name: job.Name, State: job.State, StateReason: job.StateReason, Rows: rows,
		Credits:   map[string]any{"budget": job.BudgetCredits, "spent": job.CreditsSpent, "reserved": job.CreditsReserved},
		CreatedAt: job.CreatedAt, FinishedAt: job.FinishedAt, ResultsURL: "/v1/jobs/" + job.ID + "/results",
	}})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "enrichq-webhook")
	req.Header.Set(EventHeader, d.Event)
	req.Header.Set(DeliveryHeader, strconv.FormatInt(d.ID, 10))
	req.Header.Set(SignatureHeader, Sign(w.cfg.Secret, time.Now(), body))
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
