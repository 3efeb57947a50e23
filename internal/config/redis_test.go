package config

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
)

func TestRedisSentinelKeepsURLPasswordAndDatabase(t *testing.T) {
	t.Parallel()
	c, err := SchedulerFromEnv(env(map[string]string{
		"REDIS_URL":                       "redis://app:pw1@ignored.example:6379/3",
		"ENRICHQ_REDIS_SENTINELS":         " 10.0.0.1:26379, sentinel-b:26379 ,[::1]:26380",
		"ENRICHQ_REDIS_MASTER":            "enrichq",
		"ENRICHQ_REDIS_SENTINEL_PASSWORD": "spw",
	}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.RedisConn()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fo, ok := conn.Asynq.(asynq.RedisFailoverClientOpt)
	if !ok {
		t.Fatalf("asynq option %T, want RedisFailoverClientOpt", conn.Asynq)
	}
	want := []string{"10.0.0.1:26379", "sentinel-b:26379", "[::1]:26380"}
	if fo.MasterName != "enrichq" || strings.Join(fo.SentinelAddrs, " ") != strings.Join(want, " ") || fo.Username != "app" ||
		fo.Password != "pw1" || fo.DB != 3 || fo.SentinelPassword != "spw" {
		t.Fatalf("asynq option %+v", fo)
	}
	o := conn.Client.Options() // the failover client's primary connection
	if o.Username != "app" || o.Password != "pw1" || o.DB != 3 {
		t.Fatalf("go-redis options: user %q, db %d", o.Username, o.DB)
	}
	if strings.Contains(conn.Where, "pw1") || strings.Contains(conn.Where, "spw") || !strings.Contains(conn.Where, `"enrichq"`) {
		t.Fatalf("Where = %q", conn.Where)
	}

	direct, err := Common{RedisURL: "redis://:pw2@127.0.0.1:6390/2"}.RedisConn()
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if _, ok := direct.Asynq.(asynq.RedisClientOpt); !ok || direct.Client.Options().DB != 2 || direct.Where != "127.0.0.1:6390" {
		t.Fatalf("without sentinels: %T %+v", direct.Asynq, direct.Where)
	}
}

func TestRedisSentinelErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"ENRICHQ_REDIS_SENTINELS": "127.0.0.1:26379"}, "ENRICHQ_REDIS_MASTER: empty"},
		{map[string]string{"ENRICHQ_REDIS_MASTER": "m"}, "ENRICHQ_REDIS_SENTINELS: empty"},
		{map[string]string{"ENRICHQ_REDIS_SENTINELS": "127.0.0.1", "ENRICHQ_REDIS_MASTER": "m"}, `"127.0.0.1": want host:port`},
		{map[string]string{"ENRICHQ_REDIS_SENTINELS": "h:0", "ENRICHQ_REDIS_MASTER": "m"}, `"h:0": want host:port`},
		{map[string]string{"REDIS_URL": "mysql://x"}, "REDIS_URL"},
		{map[string]string{"ENRICHQ_REDIS_ALLOW_EVICTION": "sometimes"}, "ENRICHQ_REDIS_ALLOW_EVICTION"},
	} {
		_, err := SchedulerFromEnv(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.env, err, tc.want)
		}
	}
}

// A Redis that tells its policy neither way (miniredis has no CONFIG and
// no memory section) is refused unless eviction is allowed; one that does
// not answer is refused whatever the setting.
func TestConnectRedisUnknownPolicyAndNoAnswer(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := Common{RedisURL: "redis://" + mr.Addr() + "/0"}
	log := slog.New(slog.DiscardHandler)
	if _, err := c.ConnectRedis(context.Background(), log); err == nil || !strings.Contains(err.Error(), "maxmemory-policy unknown") {
		t.Fatalf("unknown policy: %v", err)
	}
	c.Redis.AllowEviction = true
	conn, err := c.ConnectRedis(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	mr.Close()
	if _, err := c.ConnectRedis(context.Background(), log); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("no Redis: %v", err)
	}
}
