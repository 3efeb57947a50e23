package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

// An upload past the tenant's cap is a 429 with Retry-After, and stores
// nothing; another tenant still uploads.
func TestUploadPastTheCapIs429(t *testing.T) {
	t.Parallel()
	spool := t.TempDir()
	b := setup(t, func(d *deps) { d.svc.UploadsPerTenant, d.SpoolDir = 1, spool })
	pr, pw := io.Pipe()
	defer pw.Close()
	held := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/v1/jobs", pr)
		req.Header.Set("Authorization", "Bearer "+keyA)
		req.Header.Set("Content-Type", "text/csv")
		resp, err := b.srv.Client().Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	fmt.Fprint(pw, "profile_url\nhttps://platform.example/in/slow\n")
	// Its spool exists once it holds its slot.
	for {
		if entries, _ := os.ReadDir(spool); len(entries) > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling, not timing
	}
	resp, data := b.submitCSV(t, keyA, "", "profile_url\nhttps://platform.example/in/second\n")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "10" || apiErr(t, data).Code != "too_many_uploads" {
		t.Fatalf("an upload past the cap: %d %v %s", resp.StatusCode, resp.Header, data)
	}
	if jobs, _ := b.counts(t); jobs != 0 {
		t.Fatalf("%d jobs stored by a refused upload", jobs)
	}
	if resp, data := b.submitCSV(t, keyB, "", "profile_url\nhttps://platform.example/in/other\n"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("another tenant's upload: %d %s", resp.StatusCode, data)
	}
	pw.Close()
	if code := <-held; code != http.StatusCreated {
		t.Fatalf("the held upload: %d", code)
	}
}
