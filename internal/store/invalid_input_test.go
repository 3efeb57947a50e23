package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A value Postgres cannot hold as text (U+0000) is ErrInvalidInput, a
// client's error, whichever method meets it first.
func TestNULIsInvalidInput(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	if _, _, err := st.CreateAPIKey(context.Background(), "acme", "etl\x00", nil); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("a key named with U+0000: %v, want ErrInvalidInput", err)
	}
}
