package secretbox

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"
)

func key(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	b, err := New(key(t))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"access_token":"AQX-secret"}`)
	aad := []byte("acme\x00member-1")
	sealed, err := b.Seal(secret, aad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("AQX-secret")) {
		t.Fatal("the sealed value holds the plaintext")
	}
	again, _ := b.Seal(secret, aad)
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of the same secret are equal: the nonce is not random")
	}
	got, err := b.Open(sealed, aad)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	b, _ := New(key(t))
	other, _ := New(key(t))
	aad := []byte("acme\x00member-1")
	sealed, _ := b.Seal([]byte("token"), aad)

	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	for name, tc := range map[string]struct {
		box    *Box
		sealed []byte
		aad    []byte
	}{
		"other aad":  {b, sealed, []byte("beta\x00member-1")},
		"other key":  {other, sealed, aad},
		"altered":    {b, flipped, aad},
		"truncated":  {b, sealed[:10], aad},
		"empty":      {b, nil, aad},
		"bad header": {b, append([]byte{9}, sealed[1:]...), aad},
	} {
		if _, err := tc.box.Open(tc.sealed, tc.aad); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: Open err = %v, want ErrOpen", name, err)
		}
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := key(t), key(t)
	old, _ := New(oldKey)
	sealed, _ := old.Seal([]byte("token"), nil)
	rotated, err := New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(sealed, nil); err != nil || string(got) != "token" {
		t.Fatalf("old value under the rotated box: %q, %v", got, err)
	}
	resealed, _ := rotated.Seal([]byte("token"), nil)
	if _, err := old.Open(resealed, nil); !errors.Is(err, ErrOpen) {
		t.Fatal("a new seal opens with the old key alone: the first key does not seal")
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k := key(t)
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(k),
		base64.RawURLEncoding.EncodeToString(k),
		hex.EncodeToString(k),
	} {
		keys, err := ParseKeys(s)
		if err != nil || len(keys) != 1 || !bytes.Equal(keys[0], k) {
			t.Errorf("ParseKeys(%q) = %x, %v", s, keys, err)
		}
	}
	keys, err := ParseKeys(base64.StdEncoding.EncodeToString(k) + ", " + hex.EncodeToString(k))
	if err != nil || len(keys) != 2 {
		t.Errorf("two keys: %d, %v", len(keys), err)
	}
	for _, bad := range []string{"", "short", base64.StdEncoding.EncodeToString(k[:16]), "zz" + hex.EncodeToString(k)[2:]} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q): no error", bad)
		}
	}
	if _, err := New(k[:16]); err == nil {
		t.Error("New with a 16-byte key: no error")
	}
	if _, err := New(); err == nil {
		t.Error("New without a key: no error")
	}
}
