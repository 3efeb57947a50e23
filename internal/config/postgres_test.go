package config

import "testing"

// Migrations go to ENRICHQ_MIGRATE_DATABASE_URL when it is set (a direct
// connection beside a transaction pooler); else to DATABASE_URL, as before.
func TestMigrateDatabaseURL(t *testing.T) {
	t.Parallel()
	pooled := "postgres://enrichq@127.0.0.1:6432/enrichq?default_query_exec_mode=cache_describe"
	direct := "postgres://enrichq@127.0.0.1:5432/enrichq"
	s, err := SchedulerFromEnv(env(map[string]string{"DATABASE_URL": pooled, "ENRICHQ_MIGRATE_DATABASE_URL": direct}))
	if err != nil || s.DatabaseURL != pooled || s.MigrateDatabaseURL != direct {
		t.Fatalf("scheduler: %q, migrations %q (%v)", s.DatabaseURL, s.MigrateDatabaseURL, err)
	}
	a, err := APIFromEnv(env(map[string]string{"DATABASE_URL": pooled}))
	if err != nil || a.MigrateDatabaseURL != "" {
		t.Fatalf("API without the variable: migrations %q (%v), want DATABASE_URL's (none of its own)", a.MigrateDatabaseURL, err)
	}
}
