// Package rig injects faults into a running enrichq and checks, from
// Postgres and the fake vendor's ledger, that nothing was lost and nothing
// paid twice. It holds the pieces the chaos command (dev/chaos), the fault
// tests and the engine tests (dev/chaos/enginetest) share: a TCP proxy that
// can cut every connection (a Postgres restart as its clients see it,
// without touching the real server), process control for the real
// binaries, a private Redis, and the invariant checks.
package rig

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from its own address to a target (a
// Postgres server). Cut drops every open connection and refuses new ones for
// a while: to the clients, the same as a restart of the server. The server
// itself is never touched, so a shared cluster is safe.
type Proxy struct {
	target string
	addr   string

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]bool // true: the client side
	down     bool              // refusing connections
	closed   bool
	accepted int64
	cut      int64
	refused  int64
	wg       sync.WaitGroup
}

// NewProxy listens on listen (e.g. "127.0.0.1:0") and forwards to target.
func NewProxy(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve(ln)
	return p, nil
}

// Addr is the proxy's address (host:port); it stays the same across Cut.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by Cut or Close
		}
		p.mu.Lock()
		if p.down || p.closed {
			p.refused++
			p.mu.Unlock()
			reset(c)
			continue
		}
		p.accepted++
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(1)
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.drop(client)
		return
	}
	p.mu.Lock()
	if p.down || p.closed {
		p.mu.Unlock()
		reset(server)
		p.drop(client)
		return
	}
	p.conns[server] = false
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(server, client)
	go cp(client, server)
	<-done // one side is gone: close both
	p.drop(client)
	p.drop(server)
	<-done
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// reset closes c with a TCP reset where possible, as a dying server's
// kernel would.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Down cuts every open connection and refuses new ones (the listener is
// closed: clients get "connection refused") until Up. It returns the number
// of connections cut (client and server sides count once per pair).
func (p *Proxy) Down() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		return 0
	}
	p.down = true
	_ = p.ln.Close()
	n := 0
	for c, client := range p.conns {
		reset(c)
		if client {
			n++
		}
	}
	clear(p.conns)
	p.cut += int64(n)
	return n
}

// Up listens again on the same address. If the port was taken meanwhile it
// retries for a few seconds before giving up.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down || p.closed {
		return nil
	}
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("chaos: proxy cannot listen on %s again: %w", p.addr, err)
	}
	p.ln = ln
	p.down = false
	p.wg.Add(1)
	go p.serve(ln)
	return nil
}

// Cut is Down, then Up after d: a restart that takes d. It returns the
// connections cut.
func (p *Proxy) Cut(d time.Duration) (int, error) {
	n := p.Down()
	time.Sleep(d)
	return n, p.Up()
}

// ProxyStats counts the proxy's connections.
type ProxyStats struct {
	Accepted, Cut, Refused, Open int64
}

// Stats returns the counts so far.
func (p *Proxy) Stats() ProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := ProxyStats{Accepted: p.accepted, Cut: p.cut, Refused: p.refused}
	for _, client := range p.conns {
		if client {
			st.Open++
		}
	}
	return st
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var err error
	if !p.down {
		err = p.ln.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
