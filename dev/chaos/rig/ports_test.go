package rig

import "testing"

// The rigs' ports come from below the ephemeral range, where no outgoing
// connection can take one between the pick and the server's bind, and are
// never given twice.
func TestFreePortOutsideTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low-10000 < 1000 {
		t.Skipf("the ephemeral range starts at %d: the kernel picks the ports", low)
	}
	seen := map[int]bool{}
	for range 50 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < 10000 || port >= low {
			t.Fatalf("port %d, want one in 10000-%d", port, low-1)
		}
		if seen[port] {
			t.Fatalf("port %d given twice", port)
		}
		seen[port] = true
	}
}
