package rig_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
)

// echo is a TCP server answering each line with itself.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

func TestProxyCutsAndComesBack(t *testing.T) {
	t.Parallel()
	p, err := rig.NewProxy("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "hello"); err != nil || got != "hello\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}

	if n := p.Down(); n != 1 {
		t.Errorf("Down cut %d connections, want 1", n)
	}
	// The open connection is gone, and new ones are refused.
	if _, err := roundTrip(c, "again"); err == nil {
		t.Error("a cut connection still answers")
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		// Accepted by a listener that was closing: it must not carry anything.
		if _, err := roundTrip(c2, "x"); err == nil {
			t.Error("a connection made while down answers")
		}
		c2.Close()
	} else {
		var op *net.OpError
		if !errors.As(err, &op) {
			t.Errorf("dial while down: %v", err)
		}
	}

	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial after Up: %v", err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, "back"); err != nil || got != "back\n" {
		t.Fatalf("after Up: %q %v", got, err)
	}
	if st := p.Stats(); st.Accepted < 2 || st.Cut != 1 || st.Open != 1 {
		t.Errorf("stats %+v", st)
	}
}
