package rig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one running binary of enrichq (or the fake vendor) whose stderr
// goes to a log file and whose ready line is read from stdout.
type Proc struct {
	Name string
	Log  string // the log file
	cmd  *exec.Cmd

	done chan struct{} // closed when the process has exited
	mu   sync.Mutex
	err  error // Wait's error
}

// ProcSpec says how to start a binary.
type ProcSpec struct {
	Name  string   // for messages
	Path  string   // the binary
	Args  []string // its arguments
	Env   []string // its whole environment
	Log   string   // its log file, appended to (restarts share it)
	Ready string   // the stdout line prefix that says it is ready
	// ReadyTimeout bounds the wait for the ready line. Default 30s.
	ReadyTimeout time.Duration
}

// Start starts the binary and waits for its ready line; it returns the rest
// of that line (an address, for the API and the fake vendor).
func Start(ctx context.Context, s ProcSpec) (*Proc, string, error) {
	if _, err := os.Stat(s.Path); err != nil {
		return nil, "", fmt.Errorf("%s: %s not found: run `make dev` first", s.Name, s.Path)
	}
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(logf, "=== chaos: %s started at %s\n", s.Name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env = s.Env
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &Proc{Name: s.Name, Log: s.Log, cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	var scanned sync.WaitGroup
	scanned.Add(1)
	go func() {
		defer scanned.Done()
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.HasPrefix(line, s.Ready) {
				lines <- strings.TrimSpace(strings.TrimPrefix(line, s.Ready))
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		scanned.Wait() // stdout is drained before Wait closes it
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		fmt.Fprintf(logf, "=== chaos: %s exited at %s: %v\n", s.Name, time.Now().Format(time.RFC3339Nano), err)
		logf.Close()
		close(p.done)
	}()
	timeout := s.ReadyTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line := <-lines:
		return p, line, nil
	case <-p.done:
		return nil, "", fmt.Errorf("%s exited before it was ready (%v); %s ends:\n%s", s.Name, p.Err(), s.Log, logTail(s.Log, 15))
	case <-t.C:
		p.Kill()
		return nil, "", fmt.Errorf("%s not ready after %s; %s ends:\n%s", s.Name, timeout, s.Log, logTail(s.Log, 15))
	case <-ctx.Done():
		p.Kill()
		return nil, "", ctx.Err()
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once it has exited.
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Term sends SIGTERM and waits up to bound for the process to exit; past
// that it is killed. It returns how long the exit took and whether the
// process exited by itself with status 0.
func (p *Proc) Term(bound time.Duration) (took time.Duration, clean bool) {
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.Kill()
		return time.Since(start), false
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-p.done:
		return time.Since(start), p.Err() == nil
	case <-t.C:
		p.Kill()
		return time.Since(start), false
	}
}

// Stop is Term with a bound, ignoring the outcome; for cleanup.
func (p *Proc) Stop(bound time.Duration) {
	select {
	case <-p.done:
	default:
		p.Term(bound)
	}
}
