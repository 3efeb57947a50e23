package rig

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// PgBouncerConfig is the configuration every PgBouncer of the rigs runs
// with, in front of target: transaction pooling (a server connection is
// a client's for one transaction only), any database of the server (the
// "*" entry), trust authentication of the users in its userlist, and the
// session settings enrichq's API sends at connect ignored (PgBouncer 1.18
// refuses a connection that sends a startup parameter it does not know; a
// role's settings, ALTER ROLE ... SET, are what hold through it).
func PgBouncerConfig(dir string, port int, target string) string {
	host, tport, _ := net.SplitHostPort(target)
	return fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,statement_timeout,idle_in_transaction_session_timeout
server_login_retry = 1
logfile = %s
pidfile = %s
`, host, tport, port, filepath.Join(dir, "userlist.txt"), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
}

// PgBouncer is a pgbouncer process of its own on a free loopback port.
type PgBouncer struct {
	Port int
	Dir  string
	bin  string
	as   runAs
	cmd  *exec.Cmd
	done chan struct{}
}

// StartPgBouncer starts pgbouncer (from PATH, or /usr/sbin) in front of the
// Postgres server at target (host:port), as configured by PgBouncerConfig,
// and waits until it accepts connections.
func StartPgBouncer(ctx context.Context, target string) (*PgBouncer, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			return nil, fmt.Errorf("%w: no pgbouncer (Debian: apt-get install pgbouncer)", ErrNoEngine)
		}
		bin = "/usr/sbin/pgbouncer"
	}
	as, err := engineUser()
	if err != nil {
		return nil, err
	}
	dir, err := as.mkdir("enrichq-pgbouncer-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{Port: port, Dir: dir, bin: bin, as: as}
	files := map[string]string{
		"pgbouncer.ini": PgBouncerConfig(dir, port, target),
		"userlist.txt":  `"postgres" ""` + "\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return nil, err
		}
		if err := os.Chown(path, as.uid, as.gid); err != nil {
			return nil, err
		}
	}
	if err := b.Start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

// Addr is PgBouncer's host:port.
func (b *PgBouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)) }

// URL is the URL of database db through PgBouncer; query adds parameters
// (such as "default_query_exec_mode=cache_describe").
func (b *PgBouncer) URL(db, query string) string {
	u := "postgres://postgres@" + b.Addr() + "/" + db + "?sslmode=disable"
	if query != "" {
		u += "&" + query
	}
	return u
}

// Start starts the process (again, after Kill) on the same port and waits
// until it accepts connections.
func (b *PgBouncer) Start(ctx context.Context) error {
	cmd := b.as.command(context.Background(), b.bin, filepath.Join(b.Dir, "pgbouncer.ini"))
	out, err := os.OpenFile(filepath.Join(b.Dir, "stderr.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // runuser and pgbouncer: one group to kill
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("chaos: start pgbouncer: %w", err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	done := b.done
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	for {
		c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("chaos: pgbouncer exited at start; %s ends:\n%s", filepath.Join(b.Dir, "pgbouncer.log"), logTail(filepath.Join(b.Dir, "pgbouncer.log"), 15))
		case <-ctx.Done():
			b.Kill()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to pgbouncer and waits for it to be gone: every client
// connection is cut mid-statement, and every server connection with it.
func (b *PgBouncer) Kill() {
	if b.cmd == nil {
		return
	}
	// Through runuser, pgbouncer is runuser's child: signal the group.
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.done
	_ = os.Remove(filepath.Join(b.Dir, "pgbouncer.pid"))
}

// Close stops pgbouncer and deletes its directory.
func (b *PgBouncer) Close() {
	b.Kill()
	os.RemoveAll(b.Dir)
}
