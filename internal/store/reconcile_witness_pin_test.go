package store

import (
	"testing"
	"time"
)

// The balance witness pins a lost call's charge only where the readings
// leave no doubt: the credits missing between the reading before it left
// and the next answer of its key, with no other lost call able to share
// them.
func TestPinCharges(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { x := t0.Add(time.Duration(s) * time.Second); return &x }
	n := func(v int64) *int64 { return &v }
	read := func(id int64, key string, sent, settled int, charged, remaining int64) witnessCall {
		return witnessCall{id: id, job: "j", key: key, status: LedgerSettled, sentAt: at(sent), settledAt: at(settled),
			charged: charged, reported: true, remaining: n(remaining), sameJob: true, explains: true}
	}
	lost := func(id int64, key string, sent int, charged int64) witnessCall {
		return witnessCall{id: id, job: "j", key: key, status: LedgerSettled, sentAt: at(sent), charged: charged, sameJob: true}
	}
	// a (answered before L left), L (lost: billed 1, counted 2), c (another
	// call), B (L's key replayed, charged 0).
	base := []witnessCall{
		read(1, "a", 0, 1, 2, 1000),
		lost(2, "l", 2, 2),
		read(3, "c", 3, 4, 10, 989),
		read(4, "l", 5, 6, 0, 989),
	}
	pins, why := pinCharges(base, true)
	if why != "" || len(pins) != 1 || pins[0].id != 2 || pins[0].pinned != 1 || pins[0].charged != 2 {
		t.Fatalf("pins %+v, why %q; want call 2 pinned at 1", pins, why)
	}
	// Not known to honour keys: the replay bounds nothing.
	if pins, why := pinCharges(base, false); len(pins) != 0 {
		t.Fatalf("without honoured keys: pins %+v (%q)", pins, why)
	}
	// Another lost call in the same stretch: only their sum is known.
	two := append(append([]witnessCall{}, base...), lost(5, "m", 2, 5), read(6, "m", 7, 8, 0, 989))
	two[2] = read(3, "c", 3, 4, 10, 984)
	two[3] = read(4, "l", 5, 6, 0, 984)
	two[5] = read(6, "m", 7, 8, 0, 984)
	if pins, why := pinCharges(two, true); why != "" || len(pins) != 0 {
		t.Fatalf("two lost calls between the same readings: pins %+v (%q)", pins, why)
	}
	// A balance that rises (a top-up), or credits no lost call can explain:
	// the readings are not used.
	up := append([]witnessCall{}, base...)
	up[2] = read(3, "c", 3, 4, 0, 1005)
	if _, why := pinCharges(up, true); why == "" {
		t.Fatal("a rising balance was used")
	}
	foreign := []witnessCall{read(1, "a", 0, 1, 2, 1000), read(2, "c", 2, 3, 1, 990)}
	if _, why := pinCharges(foreign, true); why == "" {
		t.Fatal("credits billed to no known call were given to none, and the readings used")
	}
}
