package store

import (
	"strconv"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
)

// The results' markers subquery is bounded by the number of stages a row
// can have a marker for (one a stage): a stage added without raising the
// bound would drop a row's markers silently.
func TestResultMarkersBoundIsTheStages(t *testing.T) {
	want := "ORDER BY stage LIMIT " + strconv.Itoa(len(domain.Lookups)) + ")"
	if !strings.Contains(resultsSelect, want) {
		t.Fatalf("resultsSelect's markers subquery does not say %q: %d stages may each have a marker", want, len(domain.Lookups))
	}
}
