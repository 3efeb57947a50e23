// Package secretbox encrypts small secrets at rest (the platform's member
// tokens) with AES-256-GCM under keys from configuration.
//
// A sealed value is: a version byte (1), the first 4 bytes of SHA-256 of the
// key (its id), a random 12-byte nonce, then the GCM ciphertext and tag. The
// caller's additional data (what the secret belongs to: a tenant and a member)
// is authenticated but not stored, so a ciphertext copied to another row does
// not open. Several keys may be given: the first seals, every one opens, so a
// key can be rotated by putting the new one first and keeping the old one
// until every secret has been sealed again.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

const (
	version  = 1
	idSize   = 4
	headSize = 1 + idSize
)

// ErrOpen is returned when a sealed value does not open: unknown key,
// altered bytes, or additional data other than the one it was sealed with.
var ErrOpen = errors.New("secretbox: cannot open the sealed value (wrong key, altered, or sealed for something else)")

// Box seals and opens secrets. It is safe for concurrent use.
type Box struct {
	seal  keyed
	byID  map[[idSize]byte]cipher.AEAD
	count int
}

type keyed struct {
	id   [idSize]byte
	aead cipher.AEAD
}

// New returns a Box sealing with keys[0] and opening with any of keys. Each
// key is KeySize bytes.
func New(keys ...[]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secretbox: a key is required")
	}
	b := &Box{byID: make(map[[idSize]byte]cipher.AEAD, len(keys)), count: len(keys)}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("secretbox: key %d is %d bytes, want %d", i+1, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(k)
		var id [idSize]byte
		copy(id[:], sum[:idSize])
		if i == 0 {
			b.seal = keyed{id: id, aead: aead}
		}
		if _, dup := b.byID[id]; !dup {
			b.byID[id] = aead
		}
	}
	return b, nil
}

// ParseKeys reads a comma-separated list of keys, each 32 bytes in standard
// or URL-safe base64 (padded or not) or in hex, as configuration gives them
// (`openssl rand -base64 32` makes one). The first key seals.
func ParseKeys(s string) ([][]byte, error) {
	var keys [][]byte
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := parseKey(part)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	return keys, nil
}

func parseKey(s string) ([]byte, error) {
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("decodes to %d bytes, want %d (make one with: openssl rand -base64 32)", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("not base64 or hex of %d bytes (make one with: openssl rand -base64 32)", KeySize)
}

// Seal encrypts plaintext for aad (what the secret belongs to).
func (b *Box) Seal(plaintext, aad []byte) ([]byte, error) {
	ns := b.seal.aead.NonceSize()
	out := make([]byte, headSize+ns, headSize+ns+len(plaintext)+b.seal.aead.Overhead())
	out[0] = version
	copy(out[1:headSize], b.seal.id[:])
	if _, err := rand.Read(out[headSize:]); err != nil {
		return nil, fmt.Errorf("secretbox: nonce: %w", err)
	}
	return b.seal.aead.Seal(out, out[headSize:], plaintext, aad), nil
}

// Open decrypts a value sealed by Seal with the same aad, or returns ErrOpen.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < headSize || sealed[0] != version {
		return nil, ErrOpen
	}
	var id [idSize]byte
	copy(id[:], sealed[1:headSize])
	aead, ok := b.byID[id]
	if !ok || len(sealed) < headSize+aead.NonceSize()+aead.Overhead() {
		return nil, ErrOpen
	}
	nonce := sealed[headSize : headSize+aead.NonceSize()]
	pt, err := aead.Open(nil, nonce, sealed[headSize+aead.NonceSize():], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// String never shows a key.
func (b *Box) String() string { return fmt.Sprintf("secretbox.Box{keys: %d}", b.count) }
