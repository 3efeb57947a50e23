package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// submit_job's idempotency_key returns the first job for the same request
// only: the key sent with another budget is refused, as by the REST API
// (the service checks it), and nothing more is stored.
func TestSubmitJobRefusesAReusedKey(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	a := s.connect(t, keyAcme)
	list := map[string]any{"rows": companies(2), "roles": []string{"CTO"}, "idempotency_key": "q4-1"}
	var first, again status
	a.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 10}), &first)
	a.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 10}), &again)
	if again.ID != first.ID {
		t.Fatalf("the same request under the key made job %s beside %s", again.ID, first.ID)
	}
	if msg := a.refused(t, "submit_job", merge(list, map[string]any{"budget_credits": 20})); !strings.HasPrefix(msg, "idempotency_key_reused") {
		t.Errorf("another budget under the key: %q", msg)
	}
	if jobs, _ := storetest.JobsAndRows(t, s.b.Store); jobs != 1 {
		t.Errorf("%d jobs stored, want 1", jobs)
	}
}
