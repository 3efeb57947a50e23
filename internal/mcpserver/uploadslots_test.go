package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// MCP estimates of a stored upload take the upload slots REST takes: of six
// at once, four (the tenant's slots) parse while two are refused. The four
// are held where they read the stored upload, by a lock on its table: no
// timing decides who is in. The pool has room for all six, so that without
// the slots all six would be seen waiting there.
func TestEstimatesOfAStoredUploadTakeUploadSlots(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{NoWorker: true, MaxConns: 16}, Keys: testKeys(),
		Deps: func(d *httpapi.Deps) { d.MCPMaxBudget = defaultCeiling }})
	s := &stack{b: api.Bundle, api: api.API}
	id := s.storeUpload(t, keyAcme, "profile_url\nhttps://platform.example/in/jane\n")
	const calls = 6
	sessions := make([]*session, calls)
	for i := range sessions {
		sessions[i] = s.connect(t, keyAcme)
	}
	waiting, unlock := storetest.LockUploads(t, s.b.Store)
	answers := make(chan *mcp.CallToolResult, calls)
	for _, sess := range sessions {
		go func() {
			res, err := sess.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "estimate_job",
				Arguments: map[string]any{"upload_id": id}})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "call failed: " + err.Error()}}}
			}
			answers <- res
		}()
	}
	// Every call either waits for the lock, holding its slot, or has answered.
	var held int
	for {
		if held = waiting(); held+len(answers) >= calls {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling, not timing
	}
	if held != service.DefaultUploadsPerTenant || len(answers) != calls-service.DefaultUploadsPerTenant {
		t.Fatalf("%d estimates parse at once and %d answered; want %d and %d", held, len(answers),
			service.DefaultUploadsPerTenant, calls-service.DefaultUploadsPerTenant)
	}
	for range calls - held {
		if res := <-answers; !res.IsError || !strings.Contains(text(res), "too_many_uploads") {
			t.Errorf("an estimate past the slots: %s", text(res))
		}
	}
	unlock()
	for range held {
		if res := <-answers; res.IsError {
			t.Errorf("an estimate within the slots: %s", text(res))
		}
	}
}

// storeUpload stores csv through POST /v1/uploads and returns its id.
func (s *stack) storeUpload(t *testing.T, key, csv string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.api.URL+"/v1/uploads", strings.NewReader(csv))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var up struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &up) != nil || up.ID == "" {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	return up.ID
}
