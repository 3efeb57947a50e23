package rig

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"
)

// AnswerCutter forwards TCP connections to a Postgres server and, when
// armed, cuts the connection of the next request that carries a given
// string: the request reaches the server (and commits there) or not, and
// nothing of the server's answer reaches the client. To the client it is
// the connection lost with a statement in flight, its outcome unknown: what
// a failover, a crash or a network fault does at the worst moment.
type AnswerCutter struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	rule  *cutRule
	conns map[net.Conn]struct{}
	cuts  int
	wg    sync.WaitGroup
}

type cutRule struct {
	match   []byte
	deliver bool
	done    chan struct{}
}

// NewAnswerCutter listens on listen (e.g. "127.0.0.1:0") and forwards to target.
func NewAnswerCutter(listen, target string) (*AnswerCutter, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	c := &AnswerCutter{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	c.wg.Add(1)
	go c.serve()
	return c, nil
}

// Addr is the cutter's address (host:port).
func (c *AnswerCutter) Addr() string { return c.ln.Addr().String() }

// Arm sets the next cut: the first request sent from now on that contains
// match (a parameter's value, or a statement's text; any request when match
// is empty). With deliver, the request reaches the server and the
// connection is cut when the server has answered it in full (it ran, and
// committed if it was to), the answer dropped; without, the request is
// dropped and the connection cut at once (nothing of it ran). The channel
// is closed once the cut is done. One rule at a time: Arm replaces it.
func (c *AnswerCutter) Arm(match string, deliver bool) <-chan struct{} {
	r := &cutRule{match: []byte(match), deliver: deliver, done: make(chan struct{})}
	c.mu.Lock()
	c.rule = r
	c.mu.Unlock()
	return r.done
}

// Cuts is how many connections were cut so far.
func (c *AnswerCutter) Cuts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cuts
}

// Close stops the cutter and closes every connection.
func (c *AnswerCutter) Close() error {
	err := c.ln.Close()
	c.mu.Lock()
	for conn := range c.conns {
		_ = conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (c *AnswerCutter) serve() {
	defer c.wg.Done()
	for {
		client, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go c.pipe(client)
	}
}

func (c *AnswerCutter) track(conn net.Conn, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.conns[conn] = struct{}{}
	} else {
		delete(c.conns, conn)
	}
}

// take returns the armed rule if window matches it, disarming it.
func (c *AnswerCutter) take(window []byte) *cutRule {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rule == nil || !bytes.Contains(window, c.rule.match) {
		return nil
	}
	r := c.rule
	c.rule = nil
	c.cuts++
	return r
}

func (c *AnswerCutter) pipe(client net.Conn) {
	defer c.wg.Done()
	server, err := net.DialTimeout("tcp", c.target, 5*time.Second)
	if err != nil {
		reset(client)
		return
	}
	c.track(client, true)
	c.track(server, true)
	var once sync.Once
	cut := func() {
		once.Do(func() {
			reset(client)
			reset(server)
			c.track(client, false)
			c.track(server, false)
		})
	}
	// swallow is set (to the rule) once a delivered request is on its way:
	// from then on the server's bytes are read as messages, dropped, and the
	// connection cut at the first ReadyForQuery.
	var swallowMu sync.Mutex
	var swallow *cutRule
	done := make(chan struct{})
	go func() { // server -> client
		defer close(done)
		buf := make([]byte, 32<<10)
		var fr framer
		for {
			n, err := server.Read(buf)
			if n > 0 {
				swallowMu.Lock()
				r := swallow
				swallowMu.Unlock()
				if r != nil {
					if fr.readyIn(buf[:n]) {
						cut()
						close(r.done)
						return
					}
					continue
				}
				if _, werr := client.Write(buf[:n]); werr != nil {
					cut()
					return
				}
			}
			if err != nil {
				cut()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	var tail []byte // the end of the bytes before, for a match across two reads
	for {
		n, err := client.Read(buf)
		if n > 0 {
			window := append(tail, buf[:n]...)
			if r := c.take(window); r != nil {
				if !r.deliver {
					cut()
					close(r.done)
					break
				}
				swallowMu.Lock()
				swallow = r
				swallowMu.Unlock()
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				cut()
				break
			}
			keep := min(len(window), 256)
			tail = append(tail[:0], window[len(window)-keep:]...)
		}
		if err != nil {
			cut()
			break
		}
	}
	<-done
}

// framer reads the server's messages (a type byte, then a length that
// counts itself) across reads, looking for ReadyForQuery ('Z'): the end of
// an answer.
type framer struct {
	hdr  []byte
	left int // bytes of the current message's body still to skip
	typ  byte
}

// readyIn reports whether a ReadyForQuery ends within b.
func (f *framer) readyIn(b []byte) bool {
	for len(b) > 0 {
		if f.left > 0 {
			k := min(f.left, len(b))
			f.left -= k
			b = b[k:]
			if f.left == 0 && f.typ == 'Z' {
				return true
			}
			continue
		}
		k := min(5-len(f.hdr), len(b))
		f.hdr = append(f.hdr, b[:k]...)
		b = b[k:]
		if len(f.hdr) < 5 {
			return false
		}
		f.typ = f.hdr[0]
		f.left = int(binary.BigEndian.Uint32(f.hdr[1:5])) - 4
		f.hdr = f.hdr[:0]
		if f.left <= 0 {
			f.left = 0
			if f.typ == 'Z' {
				return true
			}
		}
	}
	return false
}
