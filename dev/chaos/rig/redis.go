package rig

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a private redis-server (or sentinel) on a free port, with no
// persistence: a FLUSHALL there loses every task, and touches nobody
// else's data.
type Redis struct {
	URL  string
	Addr string
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server (from PATH, or the path given) with its
// files in dir, and args after its own (e.g. "--maxmemory-policy",
// "allkeys-lru"). It fails when there is no redis-server.
func StartRedis(ctx context.Context, binary, dir string, args ...string) (*Redis, error) {
	if binary == "" {
		binary = "redis-server"
	}
	path, err := exec.LookPath(binary)
	if err != nil {
		return nil, fmt.Errorf("chaos: no redis-server: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startRedisProc(ctx, path, dir, "redis.log", port, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--protected-mode", "yes"}, args...))
}

// startRedisProc runs path with args (its port is port), logging to
// logName in dir, and waits until it answers PING.
func startRedisProc(ctx context.Context, path, dir, logName string, port int, args []string) (*Redis, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("chaos: start %s: %w", filepath.Base(path), err)
	}
	r := &Redis{URL: "redis://" + addr + "/0", Addr: addr, Port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(r.done)
	}()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.Ping(ctx).Err(); err == nil || strings.HasPrefix(err.Error(), "NOAUTH") {
			return r, nil // it answers (with requirepass, by asking for the password)
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("chaos: %s exited at start; %s ends:\n%s", filepath.Base(path), filepath.Join(dir, logName), logTail(filepath.Join(dir, logName), 15))
		case <-ctx.Done():
			r.Stop()
			return nil, ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("chaos: %s on %s does not answer", filepath.Base(path), addr)
		}
	}
}

// Stop stops the server.
func (r *Redis) Stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// Kill sends SIGKILL and waits for the process to be gone: no shutdown,
// no goodbye to clients or replicas.
func (r *Redis) Kill() {
	_ = r.cmd.Process.Kill()
	<-r.done
}

// FlushQueue deletes every Redis key of one asynq queue: for a test sharing
// a Redis with others, the same loss as FLUSHALL, scoped to its own queue.
// It returns the keys deleted.
func FlushQueue(ctx context.Context, rdb redis.UniversalClient, queue string, extraPatterns ...string) (int, error) {
	n := 0
	for _, pattern := range append([]string{"asynq:{" + queue + "}:*"}, extraPatterns...) {
		iter := rdb.Scan(ctx, 0, pattern, 500).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 500 {
				if err := rdb.Del(ctx, batch...).Err(); err != nil {
					return n, err
				}
				n += len(batch)
				batch = batch[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return n, err
		}
		if len(batch) > 0 {
			if err := rdb.Del(ctx, batch...).Err(); err != nil {
				return n, err
			}
			n += len(batch)
		}
	}
	return n, nil
}
