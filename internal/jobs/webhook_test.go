package jobs_test

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
)

// A finished job calls its callback_url with a signed body; a 500 is
// retried; every attempt is recorded.
func TestWebhookSignedAndRetried(t *testing.T) {
	t.Parallel()
	const secret = "whsec-test-0123456789"
	var mu sync.Mutex
	var bodies [][]byte
	var verifyErrs []error
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		calls++
		verifyErrs = append(verifyErrs, jobs.VerifySignature(secret, r.Header.Get(jobs.SignatureHeader), body, 5*time.Minute, time.Now()))
		bodies = append(bodies, body)
		if calls == 1 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)

	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	webhooks := jobs.NewWebhooks(b.Store, jobs.WebhookConfig{Secret: secret, AllowPrivate: true,
		RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}, b.Log)
	job := submit(b, t, companies(5), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: recv.URL + "/hook"})
	b.WaitJob(t, job.ID, domain.JobCompleted)

	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := webhooks.DeliverDue(context.Background()); err != nil {
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
	if err := jobs.VerifySignature(secret, jobs.Sign(secret, time.Now(), []byte("a")), []byte("b"), time.Minute, time.Now()); err == nil {
		t.Fatal("tampered body verified")
	}
	if err := jobs.VerifySignature(secret, jobs.Sign(secret, time.Now().Add(-time.Hour), []byte("a")), []byte("a"), time.Minute, time.Now()); err == nil {
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
		_, _, err := b.Submitter.Submit(context.Background(), jobs.Submission{Tenant: "acme", Format: "json",
			Options: ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}, Roles: []string{"CEO"}, CallbackURL: u},
			Feed: func(emit func(ingest.Lookup) error) error {
				return ingest.ExpandRows(companies(1), ingest.Options{Roles: []string{"CEO"}}, ingest.DefaultLimits(), emit)
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
	job := submit(b, t, companies(1), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: recv.URL})
	if _, err := b.Store.CancelJob(context.Background(), "acme", job.ID); err != nil {
		t.Fatal(err)
	}
	// ...but sent by a scheduler that does not allow private networks.
	wh := jobs.NewWebhooks(b.Store, jobs.WebhookConfig{Secret: "s"}, b.Log)
	if n, err := wh.DeliverDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("delivered %d (%v)", n, err)
	}
	w, err := b.Store.JobWebhook(context.Background(), job.ID)
	if err != nil || reached || !strings.Contains(w.LastError, "private") {
		t.Fatalf("record %+v (%v), reached %v: want refused at connect", w, err, reached)
	}
}
