package service

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
)

// Every job option is in the digest kept beside an idempotency key: the
// key sent again with any one option changed is another request (422
// idempotency_key_reused), never a replay of the first job. An option added
// to ingest.JobOptions and left out of the digest fails here.
func TestEveryJobOptionIsInTheIdempotencyDigest(t *testing.T) {
	t.Parallel()
	budget := int64(7)
	changed := map[string]any{
		"Name":          "other",
		"Lookups":       []domain.Stage{domain.StageProfile, domain.StageEmail},
		"Roles":         []string{"CTO"},
		"BudgetCredits": &budget,
		"MaxAge":        time.Hour,
		"CallbackURL":   "https://hooks.example/x",
		"Columns":       map[string]string{"email": "Mail"},
		"Encoding":      "windows-1252",
		"Sheet":         "Leads",
		"Vendors":       []string{"pdl", "seed"},
	}
	base := Submission{Options: ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}}}
	want := requestOptions(base)
	typ := reflect.TypeFor[ingest.JobOptions]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		v, ok := changed[f.Name]
		if !ok {
			t.Errorf("ingest.JobOptions.%s: no changed value in this test; add one, and the option to requestOptions", f.Name)
			continue
		}
		sub := base
		reflect.ValueOf(&sub.Options).Elem().Field(i).Set(reflect.ValueOf(v))
		if bytes.Equal(requestOptions(sub), want) {
			t.Errorf("ingest.JobOptions.%s changed, the digest did not: the key sent again with another %s replays the first job", f.Name, f.Name)
		}
	}
	other := base
	other.UploadID = "up_1"
	if bytes.Equal(requestOptions(other), want) {
		t.Error("another stored upload, the same digest")
	}
}
