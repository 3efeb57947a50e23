package webhook_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/webhook"
)

// A finished job calls its callback_url with a signed body; a 500 is
// retried; every attempt is recorded.
func TestWebhookSignedAndRetried(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	if _, err := b.Store.EnsureTenant(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	secret, _, err := b.Store.RotateWebhookSecret(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies [][]byte
	var verifyErrs []error
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		calls++
		verifyErrs = append(verifyErrs, webhook.VerifySignature(secret, r.Header.Get(webhook.SignatureHeader), body, 5*time.Minute, time.Now()))
		bodies = append(bodies, body)
		if calls == 1 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)

	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	d := webhook.New(b.Store, webhook.Config{AllowPrivate: true,
		RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}, b.Log)
	job := b.Submit(t, jobstest.Companies(5), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: recv.URL + "/hook"})
	b.WaitJob(t, job.ID, domain.JobCompleted)

	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := d.DeliverDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		w, err := b.Store.JobWebhook(context.Background(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.State == "delivered" {
			if w.Attempts != 2 || w.LastStatus == nil || *w.LastStatus != http.StatusNoContent {
				t.Fatalf("delivery record %+v, want delivered on the 2nd attempt", w)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook not delivered: %+v", w)
		}
		<-tick.C // the backoff is real time: a few ms
	}
	mu.Lock()
	defer mu.Unlock()
	for i, err := range verifyErrs {
		if err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if !strings.Contains(string(bodies[1]), `"state":"completed"`) || !strings.Contains(string(bodies[1]), job.ID) {
		t.Fatalf("body %s", bodies[1])
	}
	// A tampered body fails verification.
	if err := webhook.VerifySignature(secret, webhook.Sign(secret, time.Now(), []byte("a")), []byte("b"), time.Minute, time.Now()); err == nil {
		t.Fatal("tampered body verified")
	}
	if err := webhook.VerifySignature(secret, webhook.Sign(secret, time.Now().Add(-time.Hour), []byte("a")), []byte("a"), time.Minute, time.Now()); err == nil {
		t.Fatal("an hour-old signature verified")
	}
}

// Callback URLs on loopback or private networks are refused at submit and
// at connect time, unless allowed.
func TestWebhookRefusesPrivateNetworks(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.WebhooksEnabled = true
	for _, u := range []string{"http://127.0.0.1:9/x", "http://localhost/x", "https://10.1.2.3/x", "http://[::1]/x", "http://192.168.0.10/x"} {
		_, _, err := b.Submitter.Submit(context.Background(), service.Submission{Tenant: "acme", Format: "json",
			Options: ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}, Roles: []string{"CEO"}, CallbackURL: u},
			Feed: func(emit func(ingest.Lookup) error) error {
				return ingest.ExpandRows(jobstest.Companies(1), ingest.Options{Roles: []string{"CEO"}}, ingest.DefaultLimits(), emit)
			}})
		var ie *ingest.Error
		if !errors.As(err, &ie) || ie.Details[0].Column != "callback_url" {
			t.Errorf("%s: err = %v, want a callback_url error", u, err)
		}
	}
	// At connect time: a delivery to a loopback receiver fails without reaching it.
	reached := false
	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	t.Cleanup(recv.Close)
	b.Submitter.AllowPrivateCallbacks = true // stored by a misconfigured API...
	job := b.Submit(t, jobstest.Companies(1), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: recv.URL})
	if _, err := b.Store.CancelJob(context.Background(), "acme", job.ID); err != nil {
		t.Fatal(err)
	}
	// ...but sent by a scheduler that does not allow private networks.
	wh := webhook.New(b.Store, webhook.Config{}, b.Log)
	if n, err := wh.DeliverDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("delivered %d (%v)", n, err)
	}
	w, err := b.Store.JobWebhook(context.Background(), job.ID)
	if err != nil || reached || !strings.Contains(w.LastError, "private") {
		t.Fatalf("record %+v (%v), reached %v: want refused at connect", w, err, reached)
	}
}

// A receiver that hangs holds one delivery slot: the other deliveries go on
// beside it, and Run stops when its context ends.
func TestSlowReceiverHoldsOneSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hung := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read: the server then notices the sender hanging up
		select {
		case hung <- struct{}{}:
		default:
		}
		<-r.Context().Done() // hangs until the sender gives up
	}))
	t.Cleanup(slow.Close)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(fast.Close)

	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	finish := func(url string) store.Job { // a canceled job is finished: its callback is due
		job := b.Submit(t, jobstest.Companies(1), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: url})
		if _, err := b.Store.CancelJob(ctx, "acme", job.ID); err != nil {
			t.Fatal(err)
		}
		return job
	}
	d := webhook.New(b.Store, webhook.Config{AllowPrivate: true, Concurrency: 2, PerTenant: 2,
		Timeout: time.Hour, Poll: 10 * time.Millisecond}, b.Log)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(runCtx) }()

	stuck := finish(slow.URL)
	select {
	case <-hung:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow receiver was never called")
	}
	others := []store.Job{finish(fast.URL), finish(fast.URL), finish(fast.URL)}
	deadline := time.Now().Add(30 * time.Second)
	for _, job := range others {
		for {
			w, err := b.Store.JobWebhook(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if w.State == "delivered" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delivery of %s beside a hung receiver: %+v", job.ID, w)
			}
			time.Sleep(10 * time.Millisecond) // polling the deliverer's record
		}
	}
	if w, _ := b.Store.JobWebhook(ctx, stuck.ID); w.State != "pending" || w.Attempts != 1 {
		t.Errorf("the hung delivery: %+v, want its one attempt in flight", w)
	}

	stop()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
	if w, _ := b.Store.JobWebhook(ctx, stuck.ID); w.State != "pending" || w.LastError == "" {
		t.Errorf("the attempt cut by the stop: %+v, want recorded and retried later", w)
	}
}

// Each tenant's callbacks are signed with its own secret: tenant A's secret
// does not verify tenant B's callback, so no tenant can sign for another.
// A rotation takes effect at the next delivery; the old secret then fails.
func TestTenantSecretsDoNotCross(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type got struct {
		header string
		body   []byte
	}
	received := make(chan got, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Get(webhook.SignatureHeader), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	d := webhook.New(b.Store, webhook.Config{AllowPrivate: true}, b.Log)
	deliver := func(tenant string) got {
		t.Helper()
		job := b.SubmitFor(t, tenant, jobstest.Companies(1), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: recv.URL})
		if _, err := b.Store.CancelJob(ctx, tenant, job.ID); err != nil {
			t.Fatal(err)
		}
		if n, err := d.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("delivered %d (%v)", n, err)
		}
		return <-received
	}
	a := deliver("acme")
	bb := deliver("beta")
	secretA, _ := b.Store.TenantWebhookSecret(ctx, "acme")
	secretB, _ := b.Store.TenantWebhookSecret(ctx, "beta")
	if secretA == secretB {
		t.Fatal("two tenants share a webhook secret")
	}
	now := time.Now()
	if err := webhook.VerifySignature(secretA, a.header, a.body, time.Minute, now); err != nil {
		t.Errorf("acme's callback with acme's secret: %v", err)
	}
	if err := webhook.VerifySignature(secretB, bb.header, bb.body, time.Minute, now); err != nil {
		t.Errorf("beta's callback with beta's secret: %v", err)
	}
	if err := webhook.VerifySignature(secretA, bb.header, bb.body, time.Minute, now); err == nil {
		t.Error("acme's secret verifies beta's callback")
	}
	if err := webhook.VerifySignature(secretB, a.header, a.body, time.Minute, now); err == nil {
		t.Error("beta's secret verifies acme's callback")
	}
	// What beta could forge for acme's receiver: a body signed with the secret it holds.
	forged := webhook.Sign(secretB, now, a.body)
	if err := webhook.VerifySignature(secretA, forged, a.body, time.Minute, now); err == nil {
		t.Error("a callback forged with beta's secret verifies with acme's")
	}

	rotated, _, err := b.Store.RotateWebhookSecret(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	a2 := deliver("acme")
	if err := webhook.VerifySignature(rotated, a2.header, a2.body, time.Minute, time.Now()); err != nil {
		t.Errorf("after the rotation, with the new secret: %v", err)
	}
	if err := webhook.VerifySignature(secretA, a2.header, a2.body, time.Minute, time.Now()); err == nil {
		t.Error("after the rotation, the old secret still verifies")
	}
}

// One tenant's hung receivers hold at most PerTenant slots: another
// tenant's callback goes out beside them, and the tenant's next one waits.
func TestHungTenantHoldsPerTenantSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hung := make(chan struct{}, 10)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hung <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(slow.Close)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(fast.Close)

	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	finish := func(tenant, url string) store.Job {
		job := b.SubmitFor(t, tenant, jobstest.Companies(1), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: url})
		if _, err := b.Store.CancelJob(ctx, tenant, job.ID); err != nil {
			t.Fatal(err)
		}
		return job
	}
	hog := []store.Job{finish("hog", slow.URL), finish("hog", slow.URL), finish("hog", slow.URL)}
	d := webhook.New(b.Store, webhook.Config{AllowPrivate: true, Concurrency: 3, PerTenant: 2,
		Timeout: time.Hour, Poll: 10 * time.Millisecond}, b.Log)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- d.Run(runCtx) }()
	defer func() {
		stop()
		<-ran
	}()
	for range 2 {
		select {
		case <-hung:
		case <-time.After(30 * time.Second):
			t.Fatal("the hog's receivers were never called")
		}
	}
	calm := finish("calm", fast.URL)
	deadline := time.Now().Add(30 * time.Second)
	for {
		w, err := b.Store.JobWebhook(ctx, calm.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.State == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another tenant's callback beside two hung ones: %+v", w)
		}
		time.Sleep(10 * time.Millisecond) // polling the deliverer's record
	}
	attempted := 0
	for _, j := range hog {
		if w, _ := b.Store.JobWebhook(ctx, j.ID); w.Attempts > 0 {
			attempted++
		}
	}
	if attempted != 2 {
		t.Errorf("%d of the hog's 3 callbacks in flight, want its 2 slots", attempted)
	}
	select {
	case <-hung:
		t.Error("the hog's third callback went out beside its two hung ones")
	default:
	}
}
