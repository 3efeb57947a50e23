package enrich

import (
	"fmt"
	"slices"
	"sync"

	"github.com/enrichq/enrichq/internal/config"
)

// Kind is one kind of vendor (the vendors file's `kind`): how its adapter is
// made from a vendors-file entry, and how the records it keeps in the cache
// are read back. Each adapter package declares its Kind; the vendors
// package (internal/enrich/vendors) registers them all, one line a kind.
type Kind struct {
	// Name is the kind's word in the vendors file ("seed", "pdl").
	Name config.VendorKind
	// New makes the adapter of an entry of this kind: its name, key, URL,
	// timeout, price overrides (prices) and the kind's own settings. With
	// o.Describe no call is ever made (the key may be a placeholder).
	New func(s config.VendorSpec, o BuildOptions) (Vendor, error)
	// ReadProfile reads a profile record an adapter of this kind answered
	// (Profile.Raw), kept in the cache, back into a Profile.
	ReadProfile func(raw []byte) (*Profile, error)
	// Unnamed: records kept without a kind are this kind's (the one kind
	// there was before kinds were kept with them).
	Unnamed bool
	// MaxCallCharge is the most one call of an entry may cost by the
	// kind's contract (or its configured prices, when more), in its
	// credits: Build refuses a credit_value that would overflow it.
	MaxCallCharge func(s config.VendorSpec) int64
}

// BuildOptions are what the caller adds to a vendors-file entry.
type BuildOptions struct {
	// UserAgent is sent with every call ("" the adapter's default).
	UserAgent string
	// Describe: the adapter is made only to read its capabilities and
	// prices (the API's estimate and vendor order): it makes no call, and
	// needs no key.
	Describe bool
}

// describeKey is the key an adapter is made with when only described: no
// call is ever made with it.
const describeKey = "describe-only"

var (
	kindsMu sync.RWMutex
	kinds   = map[config.VendorKind]Kind{}
)

// Register adds a kind. A kind registered twice is a programming error.
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[k.Name]; dup || k.Name == "" || k.New == nil {
		panic(fmt.Sprintf("enrich: kind %q registered twice, or without a name or constructor", k.Name))
	}
	kinds[k.Name] = k
}

// Kinds are the registered kinds' names, sorted.
func Kinds() []config.VendorKind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]config.VendorKind, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Build makes the adapter of a vendors-file entry by its kind: the one
// builder the worker, the vendor order and the estimate use, so that what
// the file says (prices above all) reaches each alike.
func Build(s config.VendorSpec, o BuildOptions) (Vendor, error) {
	kindsMu.RLock()
	k, ok := kinds[s.Kind]
	kindsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("vendor %s: unknown kind %q", s.Name, s.Kind)
	}
	if err := fitsInUnits(s, k); err != nil {
		return nil, err
	}
	if o.Describe && s.Key == "" {
		s.Key = describeKey
	}
	v, err := k.New(s, o)
	if err != nil {
		return nil, fmt.Errorf("vendor %s: %w", s.Name, err)
	}
	return v, nil
}

// ReadProfileRecord reads a cached profile record kept by a vendor of kind
// ("" for a record kept without its kind).
func ReadProfileRecord(kind string, raw []byte) (*Profile, error) {
	kindsMu.RLock()
	k, ok := kinds[config.VendorKind(kind)]
	if !ok && kind == "" {
		for _, c := range kinds {
			if c.Unnamed {
				k, ok = c, true
			}
		}
	}
	kindsMu.RUnlock()
	if !ok || k.ReadProfile == nil {
		return nil, fmt.Errorf("enrich: no registered kind %q reads profile records", kind)
	}
	return k.ReadProfile(raw)
}
