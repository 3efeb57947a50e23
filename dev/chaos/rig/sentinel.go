package rig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelSettings are the failover settings of a SentinelGroup, as in
// sentinel.conf (docs/operations.md, "Redis Sentinel").
type SentinelSettings struct {
	// DownAfter is down-after-milliseconds: how long the primary may not
	// answer before a sentinel thinks it down. Default 5s, well under
	// asynq's 30 s lease: a failover at Sentinel's default (30 s) lets every
	// lease in flight expire.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout: a failover that did not finish
	// is tried again after twice this. Default 10s.
	FailoverTimeout time.Duration
	// ParallelSyncs is parallel-syncs: replicas resynchronised with a new
	// primary at once. Default 1.
	ParallelSyncs int
	// Quorum is the sentinels that must agree the primary is down. Default 2.
	Quorum int
	// Password, when set, is the primary's and the replica's requirepass
	// (and masterauth), and the sentinels' auth-pass: clients need it.
	Password string
}

func (s *SentinelSettings) defaults() {
	if s.DownAfter == 0 {
		s.DownAfter = 5 * time.Second
	}
	if s.FailoverTimeout == 0 {
		s.FailoverTimeout = 10 * time.Second
	}
	if s.ParallelSyncs == 0 {
		s.ParallelSyncs = 1
	}
	if s.Quorum == 0 {
		s.Quorum = 2
	}
}

// String is the settings as sentinel.conf lines say them.
func (s SentinelSettings) String() string {
	return fmt.Sprintf("down-after-milliseconds %d, failover-timeout %d, parallel-syncs %d, quorum %d of 3",
		s.DownAfter.Milliseconds(), s.FailoverTimeout.Milliseconds(), s.ParallelSyncs, s.Quorum)
}

// SentinelGroup is Redis as a high-availability deployment runs it, on
// loopback: a primary, one replica and three sentinels, each a process of
// its own with its files in a directory of its own.
type SentinelGroup struct {
	Master    string // the name the sentinels monitor the primary under
	Settings  SentinelSettings
	Primary   *Redis
	Replica   *Redis
	Sentinels []*Redis
}

// SentinelBinary is the sentinel's binary (Debian's redis-sentinel).
const SentinelBinary = "redis-sentinel"

// StartSentinelGroup starts the group with its files under dir and waits
// until every sentinel knows the replica and the other two, so that a
// failover can happen. It needs redis-server and redis-sentinel on PATH.
func StartSentinelGroup(ctx context.Context, dir, master string, s SentinelSettings) (g *SentinelGroup, err error) {
	s.defaults()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("chaos: no redis-server: %w", err)
	}
	sentinel, err := exec.LookPath(SentinelBinary)
	if err != nil {
		return nil, fmt.Errorf("chaos: no %s: %w", SentinelBinary, err)
	}
	g = &SentinelGroup{Master: master, Settings: s}
	defer func() {
		if err != nil {
			g.Stop()
		}
	}()
	var auth []string
	if s.Password != "" {
		auth = []string{"--requirepass", s.Password, "--masterauth", s.Password}
	}
	if g.Primary, err = StartRedis(ctx, server, filepath.Join(dir, "primary"), auth...); err != nil {
		return nil, err
	}
	if g.Replica, err = StartRedis(ctx, server, filepath.Join(dir, "replica"),
		append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(g.Primary.Port)}, auth...)...); err != nil {
		return nil, err
	}
	// The sentinels learn the replica from the primary's INFO: it must be
	// attached first.
	if err := waitFor(ctx, 20*time.Second, "the replica in sync", func(c context.Context) (bool, error) {
		return replicaInSync(c, g.Replica.Addr, s.Password)
	}); err != nil {
		return nil, err
	}
	for i := range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		sdir := filepath.Join(dir, fmt.Sprintf("sentinel-%d", i+1))
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			return nil, err
		}
		conf := filepath.Join(sdir, "sentinel.conf") // the sentinel rewrites it: its own copy
		body := strings.Join([]string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + sdir,
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", master, g.Primary.Port, s.Quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", master, s.DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", master, s.FailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s %d", master, s.ParallelSyncs),
		}, "\n") + "\n"
		if s.Password != "" {
			body += fmt.Sprintf("sentinel auth-pass %s %s\n", master, s.Password)
		}
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return nil, err
		}
		r, err := startRedisProc(ctx, sentinel, sdir, "sentinel.log", port, []string{conf})
		if err != nil {
			return nil, err
		}
		g.Sentinels = append(g.Sentinels, r)
	}
	for _, sn := range g.Sentinels {
		if err := waitFor(ctx, 30*time.Second, "sentinel "+sn.Addr+" to know the replica and the other sentinels", func(c context.Context) (bool, error) {
			return g.knows(c, sn.Addr)
		}); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// SentinelAddrs are the sentinels' host:port.
func (g *SentinelGroup) SentinelAddrs() []string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr
	}
	return addrs
}

// knows reports whether the sentinel at addr knows one replica and two
// other sentinels of the group.
func (g *SentinelGroup) knows(ctx context.Context, addr string) (bool, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer c.Close()
	replicas, err := c.Replicas(ctx, g.Master).Result()
	if err != nil {
		return false, nil
	}
	sentinels, err := c.Sentinels(ctx, g.Master).Result()
	if err != nil {
		return false, nil
	}
	return len(replicas) == 1 && len(sentinels) == 2, nil
}

// PrimaryAddr is the primary's address as the sentinel at addr sees it.
func (g *SentinelGroup) PrimaryAddr(ctx context.Context, addr string) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, g.Master).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("chaos: sentinel %s: master %s at %v", addr, g.Master, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// WaitFailover waits until every sentinel names the replica as the primary
// and the replica says it is one.
func (g *SentinelGroup) WaitFailover(ctx context.Context, within time.Duration) error {
	return waitFor(ctx, within, "the failover to "+g.Replica.Addr, func(c context.Context) (bool, error) {
		for _, sn := range g.Sentinels {
			if a, err := g.PrimaryAddr(c, sn.Addr); err != nil || a != g.Replica.Addr {
				return false, nil
			}
		}
		rc := redis.NewClient(&redis.Options{Addr: g.Replica.Addr, Password: g.Settings.Password})
		defer rc.Close()
		info, err := rc.Info(c, "replication").Result()
		return err == nil && strings.Contains(info, "role:master"), nil
	})
}

// Stop stops every process of the group still running.
func (g *SentinelGroup) Stop() {
	for _, r := range append(append([]*Redis{}, g.Sentinels...), g.Replica, g.Primary) {
		if r != nil {
			r.Stop()
		}
	}
}

func replicaInSync(ctx context.Context, addr, password string) (bool, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return false, nil
	}
	return strings.Contains(info, "master_link_status:up"), nil
}

// waitFor polls cond every 100 ms until it is true, within the bound.
func waitFor(ctx context.Context, within time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("chaos: waiting for %s: not within %s", what, within)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
