package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestNewHTTPServerSetsEveryTimeout(t *testing.T) {
	t.Parallel()
	srv := NewHTTPServer(http.NotFoundHandler(), Timeouts{Write: time.Second}, nil)
	d := DefaultTimeouts()
	if srv.ReadHeaderTimeout != d.ReadHeader || srv.ReadTimeout != d.Read || srv.WriteTimeout != time.Second || srv.IdleTimeout != d.Idle {
		t.Fatalf("timeouts: header %v, read %v, write %v, idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
}

// An upload may take longer than the server's read and write timeouts: it
// pushes its own deadlines, and its answer still arrives. A request that is
// not an upload is held to them.
func TestUploadOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	short := Timeouts{ReadHeader: time.Second, Read: 300 * time.Millisecond, Write: 300 * time.Millisecond, Idle: time.Second}
	srv := httptest.NewUnstartedServer(b.srv.Config.Handler)
	srv.Config = NewHTTPServer(b.srv.Config.Handler, short, nil)
	srv.Start()
	t.Cleanup(srv.Close)

	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		fmt.Fprint(pw, "profile_url\n")
		for i := range 8 { // about 800 ms: past both timeouts
			time.Sleep(100 * time.Millisecond)
			fmt.Fprintf(pw, "https://platform.example/in/t%d\n", i)
		}
	}()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/jobs", pr)
	req.Header.Set("Authorization", "Bearer "+keyA)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("a slow upload got no answer: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a slow upload: %d %s", resp.StatusCode, data)
	}

	// A PATCH whose body trickles past the read timeout is cut.
	pr, pw = io.Pipe()
	go func() {
		defer pw.Close()
		fmt.Fprint(pw, `{"budget_credits":`)
		time.Sleep(800 * time.Millisecond)
		fmt.Fprint(pw, `5}`)
	}()
	req, _ = http.NewRequest(http.MethodPatch, srv.URL+"/v1/jobs/"+decode[jobStatus](t, data).ID, pr)
	req.Header.Set("Authorization", "Bearer "+keyA)
	req.Header.Set("Content-Type", "application/json")
	resp, err = srv.Client().Do(req)
	if err == nil {
		data, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("a PATCH slower than the read timeout: %d %s", resp.StatusCode, data)
		}
	}
}
