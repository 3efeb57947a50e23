package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A database made and dropped on the test server, by name.
func TestCreateAndDropDatabase(t *testing.T) {
	t.Parallel()
	admin := storetest.ServerURL(t, "postgres")
	ctx := context.Background()
	name := "enrichq_created_" + time.Now().UTC().Format("150405.000000")
	if err := storetest.CreateDatabase(ctx, admin, name, ""); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, storetest.ServerURL(t, name), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Ping(ctx)
	st.Close()
	if err != nil {
		t.Errorf("the new database does not answer: %v", err)
	}
	if err := storetest.Checkpoint(ctx, admin); err != nil {
		t.Logf("checkpoint (needs superuser or pg_checkpoint): %v", err)
	}
	if err := storetest.DropDatabase(ctx, admin, name); err != nil {
		t.Fatal(err)
	}
	if err := storetest.DropDatabase(ctx, admin, name); err != nil {
		t.Errorf("dropping a database that is gone: %v", err)
	}
}
