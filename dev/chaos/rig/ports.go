package rig

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The rigs' servers listen on ports picked below the kernel's ephemeral
// range. A port taken from that range (a listen on port 0) and freed before
// the server binds it can be handed to any outgoing connection meanwhile,
// and a test suite opens thousands: a CI run lost a standby that way.
// Below the range only another listener can take it, and none of this
// process' servers is given a port twice.
var ports struct {
	sync.Mutex
	given map[int]bool
}

// freePort picks a free TCP port on 127.0.0.1 below the ephemeral range.
func freePort() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
	}
	lo, hi := 10000, ephemeralLow()
	if hi-lo < 1000 { // an unusual range: the kernel's choice, as before
		return kernelPort()
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		if ports.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		ln.Close()
		ports.given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("chaos: no free port in %d-%d after 200 tries", lo, hi-1)
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux;
// 32768, its default, elsewhere).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

func kernelPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// logTail is the last n lines of a server's log file, for an error that
// outlives the test's temporary directory.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
