package config_test

// An external test package: the rig's Redis imports the vendors' fakes, which
// import config.

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/config"
)

// startRedis runs a private redis-server with args: the policy is a
// server-wide setting, never to be changed on the shared Redis.
func startRedis(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH (Debian: apt-get install redis-server)")
	}
	r, err := rig.StartRedis(context.Background(), "", t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r.URL
}

func TestConnectRedisRefusesAnEvictingRedis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		allow  bool
		refuse string // "" : starts
		warn   string
	}{
		{name: "noeviction", args: []string{"--maxmemory-policy", "noeviction"}},
		{name: "allkeys-lru", args: []string{"--maxmemory-policy", "allkeys-lru"}, refuse: "has maxmemory-policy allkeys-lru"},
		{name: "allkeys-lru allowed", args: []string{"--maxmemory-policy", "allkeys-lru"}, allow: true, warn: "REDIS MAY EVICT"},
		// CONFIG renamed away, as managed services do: INFO memory still tells.
		{name: "volatile-ttl, no CONFIG", args: []string{"--maxmemory-policy", "volatile-ttl", "--rename-command", "CONFIG", ""},
			refuse: "has maxmemory-policy volatile-ttl"},
		{name: "noeviction, no CONFIG", args: []string{"--rename-command", "CONFIG", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := config.Common{RedisURL: startRedis(t, tc.args...), Redis: config.Redis{AllowEviction: tc.allow}}
			var logs bytes.Buffer
			conn, err := c.ConnectRedis(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), "ENRICHQ_REDIS_ALLOW_EVICTION=true") {
					t.Fatalf("error %v, want %q and the way out", err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			conn.Close()
			if !strings.Contains(logs.String(), tc.warn) || (tc.warn == "" && logs.Len() > 0) {
				t.Fatalf("logs %q, want %q", logs.String(), tc.warn)
			}
		})
	}
}
