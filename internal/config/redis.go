package config

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Redis is how the services reach Redis beyond REDIS_URL: through Redis
// Sentinel, and whether a Redis that may evict keys is accepted.
type Redis struct {
	// Sentinels are the Sentinel addresses, host:port
	// (ENRICHQ_REDIS_SENTINELS, comma-separated; default none: REDIS_URL's
	// host is Redis). With them every client asks the sentinels for the
	// current primary of Master and follows a failover; REDIS_URL's host is
	// then unused, its user, password, database and TLS (rediss://) still
	// apply to the primary.
	Sentinels []string
	// Master is the name the sentinels monitor the primary under
	// (ENRICHQ_REDIS_MASTER; required with Sentinels).
	Master string
	// SentinelPassword authenticates to the sentinels themselves
	// (ENRICHQ_REDIS_SENTINEL_PASSWORD, default none). A secret.
	SentinelPassword string
	// AllowEviction lets a service start on a Redis whose maxmemory-policy
	// is not noeviction (ENRICHQ_REDIS_ALLOW_EVICTION, default false). Such
	// a Redis drops queued tasks and the limiter's state under memory
	// pressure; Postgres finds the chunks again, late.
	AllowEviction bool
}

func (c *Redis) read(r *reader) {
	if v := r.getenv("ENRICHQ_REDIS_SENTINELS"); v != "" {
		c.Sentinels = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.Sentinels = append(c.Sentinels, s)
			}
		}
	}
	r.str("ENRICHQ_REDIS_MASTER", &c.Master)
	r.str("ENRICHQ_REDIS_SENTINEL_PASSWORD", &c.SentinelPassword)
	r.bool("ENRICHQ_REDIS_ALLOW_EVICTION", &c.AllowEviction)
}

func (c Redis) validate(redisURL string) error {
	var errs []error
	if _, err := redis.ParseURL(redisURL); err != nil {
		errs = append(errs, fmt.Errorf("REDIS_URL: %w", err))
	}
	switch {
	case len(c.Sentinels) > 0 && c.Master == "":
		errs = append(errs, errors.New("ENRICHQ_REDIS_MASTER: empty; the sentinels of ENRICHQ_REDIS_SENTINELS need the master's name"))
	case len(c.Sentinels) == 0 && c.Master != "":
		errs = append(errs, errors.New("ENRICHQ_REDIS_SENTINELS: empty; ENRICHQ_REDIS_MASTER names a master of sentinels"))
	}
	for _, s := range c.Sentinels {
		host, port, err := net.SplitHostPort(s)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			errs = append(errs, fmt.Errorf("ENRICHQ_REDIS_SENTINELS: %q: want host:port", s))
		}
	}
	return errors.Join(errs...)
}

// RedisConn is one service's way to Redis: the option asynq builds its
// clients from, and a go-redis client for the rest (the rate limiter). Both
// go to REDIS_URL's server, or both follow the sentinels.
type RedisConn struct {
	Asynq  asynq.RedisConnOpt
	Client *redis.Client
	// Where names the server or the sentinels, for logs (no password).
	Where string
}

// Close closes Client.
func (c *RedisConn) Close() error { return c.Client.Close() }

// RedisConn builds the connection of c without contacting Redis.
func (c Common) RedisConn() (*RedisConn, error) {
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("configuration: REDIS_URL: %w", err)
	}
	if len(c.Redis.Sentinels) == 0 {
		aopt, err := asynq.ParseRedisURI(c.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("configuration: REDIS_URL: %w", err)
		}
		return &RedisConn{Asynq: aopt, Client: redis.NewClient(opt), Where: opt.Addr}, nil
	}
	s := c.Redis
	fo := &redis.FailoverOptions{
		MasterName:       s.Master,
		SentinelAddrs:    s.Sentinels,
		SentinelPassword: s.SentinelPassword,
		Username:         opt.Username,
		Password:         opt.Password,
		DB:               opt.DB,
		TLSConfig:        opt.TLSConfig,
	}
	return &RedisConn{
		Asynq: asynq.RedisFailoverClientOpt{MasterName: s.Master, SentinelAddrs: s.Sentinels, SentinelPassword: s.SentinelPassword,
			Username: opt.Username, Password: opt.Password, DB: opt.DB, TLSConfig: opt.TLSConfig},
		Client: redis.NewFailoverClient(fo),
		Where:  fmt.Sprintf("master %q of sentinels %s", s.Master, strings.Join(s.Sentinels, ",")),
	}, nil
}

// redisCheckTimeout bounds the start's look at Redis.
const redisCheckTimeout = 15 * time.Second

// ConnectRedis builds the connection of c and checks, once, that Redis
// answers and will not evict keys: a Redis under memory pressure with any
// maxmemory-policy but noeviction drops queued tasks and the rate
// limiter's state without an error to anyone. It refuses to go on unless
// AllowEviction, which logs a warning instead.
func (c Common) ConnectRedis(ctx context.Context, log *slog.Logger) (*RedisConn, error) {
	conn, err := c.RedisConn()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	defer cancel()
	policy, err := MaxmemoryPolicy(ctx, conn.Client)
	switch {
	case err == nil && policy == "noeviction":
		return conn, nil
	case err != nil && errors.Is(err, errPolicyUnknown) && c.Redis.AllowEviction:
		log.Warn("Redis's maxmemory-policy cannot be read; starting because ENRICHQ_REDIS_ALLOW_EVICTION=true",
			"redis", conn.Where, "err", err)
		return conn, nil
	case err != nil:
		conn.Close()
		if errors.Is(err, errPolicyUnknown) {
			return nil, fmt.Errorf("Redis at %s: %w; set ENRICHQ_REDIS_ALLOW_EVICTION=true to start without knowing", conn.Where, err)
		}
		return nil, fmt.Errorf("Redis at %s: %w", conn.Where, err)
	case c.Redis.AllowEviction:
		log.Warn("REDIS MAY EVICT ENRICHQ'S KEYS: maxmemory-policy is not noeviction; under memory pressure Redis drops queued tasks "+
			"and the vendor rate limiter's state (the scheduler re-enqueues from Postgres, late). Starting because ENRICHQ_REDIS_ALLOW_EVICTION=true; "+
			"set maxmemory-policy noeviction", "redis", conn.Where, "maxmemory_policy", policy)
		return conn, nil
	default:
		conn.Close()
		return nil, fmt.Errorf("Redis at %s has maxmemory-policy %s: it may evict queued tasks and the rate limiter's state; "+
			"set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), "+
			"or ENRICHQ_REDIS_ALLOW_EVICTION=true to run anyway", conn.Where, policy)
	}
}

// errPolicyUnknown: Redis answers, but neither CONFIG GET nor INFO tells
// its maxmemory-policy.
var errPolicyUnknown = errors.New("maxmemory-policy unknown")

// MaxmemoryPolicy reads Redis's maxmemory-policy: CONFIG GET, or where
// CONFIG is renamed or forbidden (managed services often do), INFO
// memory's maxmemory_policy.
func MaxmemoryPolicy(ctx context.Context, rdb redis.UniversalClient) (string, error) {
	if err := rdb.Ping(ctx).Err(); err != nil {
		return "", fmt.Errorf("no answer: %w", err)
	}
	m, cerr := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if p := m["maxmemory-policy"]; cerr == nil && p != "" {
		return p, nil
	}
	info, ierr := rdb.Info(ctx, "memory").Result()
	if ierr == nil {
		sc := bufio.NewScanner(strings.NewReader(info))
		for sc.Scan() {
			if p, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "maxmemory_policy:"); ok && p != "" {
				return p, nil
			}
		}
	}
	if cerr == nil {
		cerr = errors.New("CONFIG GET: no maxmemory-policy")
	}
	if ierr == nil {
		ierr = errors.New("INFO memory: no maxmemory_policy")
	}
	return "", fmt.Errorf("%w (%w; %w)", errPolicyUnknown, cerr, ierr)
}
