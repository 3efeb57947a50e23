package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/httpapi/openapitest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Two tenants and their keys.
const (
	tenantA = "acme"
	keyA    = "key-acme-0123456789"
	tenantB = "beta"
	keyB    = "key-beta-9876543210"
)

// bundle is what a test needs: a server on a fresh database, with a real
// enqueuer on a queue of its own (jobstest, without a worker).
type bundle struct {
	*jobstest.Bundle
	srv *httptest.Server
	// client checks every answer against openapi.json (openapitest).
	client *http.Client
	logs   *syncBuffer
}

// deps is what setup builds the server from: the API's Deps and the
// service's config. The service takes the API's clock and spool unless
// given its own.
type deps struct {
	Deps
	svc service.Config
}

// setup starts a server; opts adjust its deps.
func setup(t *testing.T, opts ...func(*deps)) *bundle {
	t.Helper()
	return setupOn(t, jobstest.Options{NoWorker: true}, opts...)
}

// setupOn is setup over a pipeline of o (a store's pool, workers).
func setupOn(t *testing.T, o jobstest.Options, opts ...func(*deps)) *bundle {
	t.Helper()
	b := jobstest.New(t, o)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sub := *b.Submitter
	sub.ChunkSize, sub.Log = 0, log // the default chunk, as cmd/api
	d := deps{
		Deps: Deps{Keys: NewStaticKeys(map[string]string{keyA: tenantA, keyB: tenantB}), Log: log},
		svc:  service.Config{Store: b.Store, Submitter: &sub},
	}
	for _, o := range opts {
		o(&d)
	}
	if d.svc.Now == nil {
		d.svc.Now = d.Now
	}
	if d.svc.SpoolDir == "" {
		d.svc.SpoolDir = d.SpoolDir
	}
	d.Service = service.New(d.svc)
	srv := httptest.NewServer(NewServer(d.Deps))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: openapitest.New(t, openAPIDoc).Transport(t, srv.Client().Transport)}
	return &bundle{Bundle: b, srv: srv, client: client, logs: logs}
}

// call sends a request and returns the answer with its body read.
func (b *bundle) call(t *testing.T, method, path, key string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, data
}

// submitJSON posts a JSON job and returns the answer.
func (b *bundle) submitJSON(t *testing.T, key, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return b.call(t, http.MethodPost, "/v1/jobs", key, strings.NewReader(body), append([]string{"Content-Type", "application/json"}, header...)...)
}

// submitCSV posts a CSV job with options in query ("" for none).
func (b *bundle) submitCSV(t *testing.T, key, query, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	path := "/v1/jobs"
	if query != "" {
		path += "?" + query
	}
	return b.call(t, http.MethodPost, path, key, strings.NewReader(body), append([]string{"Content-Type", "text/csv"}, header...)...)
}

// mustCreate submits a CSV job and fails the test unless it is created.
func (b *bundle) mustCreate(t *testing.T, key, query, body string) jobStatus {
	t.Helper()
	resp, data := b.submitCSV(t, key, query, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", resp.StatusCode, data)
	}
	return decode[jobStatus](t, data)
}

// counts returns the jobs and job rows in the database.
func (b *bundle) counts(t *testing.T) (jobsN, rowsN int) {
	t.Helper()
	return storetest.JobsAndRows(t, b.Store)
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, data, err)
	}
	return v
}

// apiErr decodes an error body.
func apiErr(t *testing.T, data []byte) errorJSON {
	t.Helper()
	return decode[errorBody](t, data).Error
}

func multipartBody(t *testing.T, fields [][2]string, fileName, file string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if fileName != "" {
		fw, err := mw.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(file))
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &buf
}

// finishRows claims chunk 0 of a job and saves the outcomes made by out for
// its rows, in row order.
func finishRows(t *testing.T, st *store.Store, tenant, jobID string, out func(i int, r store.Row) store.Outcome) {
	t.Helper()
	finishChunk(t, st, tenant, jobID, 0, out)
}

// finishChunk is finishRows of chunk chunk.
func finishChunk(t *testing.T, st *store.Store, tenant, jobID string, chunk int, out func(i int, r store.Row) store.Outcome) {
	t.Helper()
	ctx := context.Background()
	claim, err := st.ClaimChunk(ctx, jobID, chunk, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var outs []store.Outcome
	for i, r := range claim.Rows {
		o := out(i, r)
		o.RowID = r.ID
		if o.Prov.FetchedAt.IsZero() {
			o.Prov.FetchedAt = time.Now()
		}
		outs = append(outs, o)
	}
	ids, err := st.SaveOutcomes(ctx, tenant, claim.Token, outs, nil)
	if err != nil || len(ids) != len(outs) {
		t.Fatalf("SaveOutcomes: %d of %d written, err %v", len(ids), len(outs), err)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
