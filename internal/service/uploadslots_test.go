package service

import (
	"errors"
	"testing"
)

func TestUploadSlotsCapPerTenantAndTotal(t *testing.T) {
	t.Parallel()
	u := newUploadSlots(2, 3)
	a1, err := u.acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.acquire("a"); err != nil {
		t.Fatal(err)
	}
	var tm *TooManyUploadsError
	if _, err := u.acquire("a"); !errors.As(err, &tm) || tm.RetryAfter != UploadRetryAfter {
		t.Fatalf("a third upload of a tenant with 2 slots: %v", err)
	}
	if _, err := u.acquire("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := u.acquire("c"); !errors.As(err, &tm) {
		t.Fatalf("a fourth upload of a server with 3 slots: %v", err)
	}
	a1()
	a1() // releasing twice gives back one slot
	if _, err := u.acquire("c"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := u.acquire("c"); err == nil {
		t.Fatal("a double release gave back two slots")
	}
}
