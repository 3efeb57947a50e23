package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// Six uploads trickling their rows, on a pool of four connections, while
// another tenant polls a job's status: the polls do not wait for the
// uploads. Polls are answered while every upload is still sending; when
// uploads held a connection while their body arrived, no poll was answered
// before the uploads ended. How fast the polls are is measured by the bench
// (dev/bench, scenario slowuploads), not asserted here.
func TestSlowUploadsDoNotStarvePolls(t *testing.T) {
	t.Parallel()
	const (
		uploads  = 6
		rowsEach = 30
		rowEvery = 100 * time.Millisecond // each upload lasts about 3 s
	)
	keys := map[string]string{keyB: tenantB}
	for i := range 3 {
		keys[fmt.Sprintf("key-uploader-%d-0123456789", i)] = fmt.Sprintf("uploader-%d", i)
	}
	b := setupOn(t, jobstest.Options{NoWorker: true, MaxConns: 4}, func(d *deps) {
		d.Keys = NewStaticKeys(keys)
	})
	job := b.mustCreate(t, keyB, "", "profile_url\nhttps://platform.example/in/poll\n")

	// Each upload sends its header and first row, then a row every rowEvery.
	started := make(chan struct{}, uploads)
	var wg sync.WaitGroup
	statuses := make([]int, uploads)
	firstDone := make(chan struct{}) // closed when the first upload has its answer
	var once sync.Once
	for i := range uploads {
		pr, pw := io.Pipe()
		wg.Go(func() {
			defer pw.Close()
			fmt.Fprintf(pw, "profile_url\nhttps://platform.example/in/u%d-0\n", i)
			started <- struct{}{}
			for j := 1; j < rowsEach; j++ {
				time.Sleep(rowEvery)
				if _, err := fmt.Fprintf(pw, "https://platform.example/in/u%d-%d\n", i, j); err != nil {
					return
				}
			}
		})
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/v1/jobs", pr)
			req.Header.Set("Authorization", "Bearer "+fmt.Sprintf("key-uploader-%d-0123456789", i%3))
			req.Header.Set("Content-Type", "text/csv")
			resp, err := b.srv.Client().Do(req)
			if err != nil {
				t.Errorf("upload %d: %v", i, err)
				pr.CloseWithError(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			once.Do(func() { close(firstDone) })
			statuses[i] = resp.StatusCode
			pr.Close()
		})
	}
	for range uploads {
		<-started
	}
	time.Sleep(3 * rowEvery) // let every upload reach the server

	// Poll while the uploads trickle.
	uploadsDone := make(chan struct{})
	go func() { wg.Wait(); close(uploadsDone) }()
	polls, whileUploading := 0, 0
	for polling := true; polling; {
		resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID, keyB, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("poll: %d %s", resp.StatusCode, data)
		}
		polls++
		select {
		case <-firstDone:
		default:
			whileUploading++ // answered before any upload ended
		}
		select {
		case <-uploadsDone:
			polling = false
		default:
		}
	}
	t.Logf("%d polls during %d slow uploads on a pool of 4, %d of them answered before any upload ended", polls, uploads, whileUploading)
	if whileUploading < 3 {
		t.Errorf("%d polls answered while every upload was still sending, want several: polls wait for uploads", whileUploading)
	}
	for i, code := range statuses {
		if code != http.StatusCreated {
			t.Errorf("upload %d: %d, want 201", i, code)
		}
	}
}
