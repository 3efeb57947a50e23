package rig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The engine rigs run Postgres and PgBouncer from the Debian packages, on
// loopback, in directories of their own: a primary with a synchronous
// standby to fail over, a PgBouncer in transaction mode. Postgres will not
// run as root, nor will PgBouncer: as root they run as the postgres OS user.

// ErrNoEngine says a binary or a way to run it is missing; its text says
// what to install. Tests skip on it.
var ErrNoEngine = errors.New("engine not available")

// runAs runs binaries as the postgres OS user when this process is root.
type runAs struct {
	prefix   []string // runuser -u postgres -- (or nothing)
	uid, gid int      // of the user the binaries run as
}

// engineUser finds how to run the engines: as this user, or as postgres
// through runuser (or su) when this process is root.
func engineUser() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{uid: os.Getuid(), gid: os.Getgid()}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runAs{}, fmt.Errorf("%w: running as root, and there is no postgres OS user to run Postgres as (apt-get install postgresql)", ErrNoEngine)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if path, err := exec.LookPath("runuser"); err == nil && exec.Command(path, "-u", "postgres", "--", "true").Run() == nil {
		return runAs{prefix: []string{path, "-u", "postgres", "--"}, uid: uid, gid: gid}, nil
	}
	if path, err := exec.LookPath("su"); err == nil && exec.Command(path, "postgres", "-s", "/bin/sh", "-c", "true").Run() == nil {
		return runAs{prefix: []string{path, "postgres", "-s", "/bin/sh", "-c", `exec "$0" "$@"`}, uid: uid, gid: gid}, nil
	}
	return runAs{}, fmt.Errorf("%w: running as root, and neither runuser nor su can run commands as postgres", ErrNoEngine)
}

func (r runAs) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, r.prefix...), bin), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// mkdir makes a directory the engines' user owns (a temp dir under root's
// mode 0700 test directory would be out of its reach).
func (r runAs) mkdir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chown(dir, r.uid, r.gid); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// PostgresBin finds the directory of Postgres' server binaries: $PG_BIN, or
// the newest /usr/lib/postgresql/*/bin holding initdb and pg_ctl.
func PostgresBin() (string, error) {
	if dir := os.Getenv("PG_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: no Postgres server binaries (/usr/lib/postgresql/*/bin/initdb; Debian: apt-get install postgresql)", ErrNoEngine)
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// PGServer is a Postgres server of its own on loopback.
type PGServer struct {
	Name string
	Dir  string // its data directory
	Port int
	bin  string
	as   runAs
}

// Addr is the server's host:port.
func (s *PGServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL is a URL of database db on this server alone.
func (s *PGServer) URL(db string) string {
	return "postgres://postgres@" + s.Addr() + "/" + db + "?sslmode=disable"
}

// Log is the server's log file.
func (s *PGServer) Log() string { return filepath.Join(s.Dir, "server.log") }

// StartPrimary initdbs a fresh cluster in a directory of its own and starts
// it on a free loopback port, ready to stream to standbys. With
// syncStandby, a commit waits until that standby (by its
// application_name) has flushed it: synchronous_commit on,
// synchronous_standby_names set.
func StartPrimary(ctx context.Context, syncStandby string) (*PGServer, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	as, err := engineUser()
	if err != nil {
		return nil, err
	}
	dir, err := as.mkdir("enrichq-pg-primary-")
	if err != nil {
		return nil, err
	}
	s := &PGServer{Name: "primary", Dir: filepath.Join(dir, "data"), bin: bin, as: as}
	if out, err := as.command(ctx, filepath.Join(bin, "initdb"), "-D", s.Dir, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chaos: initdb: %w: %s", err, out)
	}
	conf := map[string]string{
		"wal_level": "replica", "max_wal_senders": "5", "hot_standby": "on",
		"synchronous_commit": "on", "synchronous_standby_names": quoteConf(syncStandby),
		"max_connections": "100", "shared_buffers": "32MB",
		// A test server: the machine does not crash under it, its processes do.
		"fsync": "off", "full_page_writes": "off",
	}
	if err := s.configure(conf); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.startFirst(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// quoteConf quotes a postgresql.conf string value.
func quoteConf(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// configure picks a free port and appends settings to postgresql.auto.conf
// (later lines win), as the server's user.
func (s *PGServer) configure(conf map[string]string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	conf["port"] = strconv.Itoa(port)
	conf["listen_addresses"] = "'127.0.0.1'"
	conf["unix_socket_directories"] = quoteConf(s.Dir)
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, conf[k])
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}

// Start starts the server and waits until it accepts connections.
func (s *PGServer) Start(ctx context.Context) error {
	if out, err := s.as.command(ctx, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-l", s.Log(), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: start %s: %w: %s\n%s ends:\n%s", s.Name, err, out, s.Log(), logTail(s.Log(), 15))
	}
	return nil
}

// startFirst starts a server for the first time: if another listener took
// its port after configure picked it, it starts again on another (nobody
// knows the first one yet).
func (s *PGServer) startFirst(ctx context.Context) error {
	for try := 1; ; try++ {
		err := s.Start(ctx)
		if err == nil || try == 3 || !strings.Contains(logTail(s.Log(), 15), "already in use") {
			return err
		}
		if err := s.configure(map[string]string{}); err != nil {
			return err
		}
	}
}

// StartStandby takes a base backup of s (pg_basebackup -R: streaming
// replication, configured) into a directory of its own and starts it as a
// hot standby named name (its application_name on the primary). Its own
// synchronous_standby_names is empty: once promoted it waits for no
// standby (there is none left).
func (s *PGServer) StartStandby(ctx context.Context, name string) (*PGServer, error) {
	dir, err := s.as.mkdir("enrichq-pg-standby-")
	if err != nil {
		return nil, err
	}
	st := &PGServer{Name: name, Dir: filepath.Join(dir, "data"), bin: s.bin, as: s.as}
	if out, err := s.as.command(ctx, filepath.Join(s.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres",
		"-D", st.Dir, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chaos: pg_basebackup: %w: %s", err, out)
	}
	conf := map[string]string{
		"primary_conninfo":          quoteConf(fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", s.Port, name)),
		"synchronous_standby_names": "''",
	}
	if err := st.configure(conf); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := st.startFirst(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return st, nil
}

// WaitSynchronous waits until standby name streams from s as its
// synchronous standby.
func (s *PGServer) WaitSynchronous(ctx context.Context, name string) error {
	for {
		state, err := storetest.StandbyState(ctx, s.URL("postgres"), name)
		if err != nil {
			return err
		}
		if state == "sync" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: %s is not the synchronous standby of %s (%q): %w", name, s.Name, state, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StopImmediate stops the server at once (pg_ctl stop -m immediate): its
// processes quit without a checkpoint, and every connection is cut, as in
// a crash of the primary.
func (s *PGServer) StopImmediate(ctx context.Context) error {
	if out, err := s.as.command(ctx, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: stop %s: %w: %s", s.Name, err, out)
	}
	return nil
}

// Promote makes a standby a primary (pg_ctl promote) and waits until it
// accepts writes.
func (s *PGServer) Promote(ctx context.Context) error {
	if out, err := s.as.command(ctx, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-w", "-t", "60", "promote").CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: promote %s: %w: %s", s.Name, err, out)
	}
	return nil
}

// Close stops the server (fast, if it still runs) and deletes its directory.
func (s *PGServer) Close() {
	if _, err := os.Stat(filepath.Join(s.Dir, "postmaster.pid")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.as.command(ctx, filepath.Join(s.bin, "pg_ctl"), "-D", s.Dir, "-m", "fast", "-w", "stop").Run()
		cancel()
	}
	os.RemoveAll(filepath.Dir(s.Dir))
}

// CreateDatabase creates database db on the server.
func (s *PGServer) CreateDatabase(ctx context.Context, db string) error {
	return storetest.CreateDatabase(ctx, s.URL("postgres"), db, "")
}

// MultiHostURL is the URL of database db on servers, in order, for pgx's
// multi-host form: a connection goes to the first that accepts writes
// (target_session_attrs=read-write), so after a failover to the new primary.
func MultiHostURL(db string, servers ...*PGServer) string {
	hosts := make([]string, len(servers))
	for i, s := range servers {
		hosts[i] = s.Addr()
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/" + db +
		"?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}
