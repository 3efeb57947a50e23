package ingest

// Limits bound the work and memory one upload may take. A zero or negative
// field means its default (see DefaultLimits).
type Limits struct {
	// MaxBytes caps the whole upload (CSV file or JSON body). Default 64 MiB.
	MaxBytes int64
	// MaxLookups caps the lookups after role expansion: a row counts one,
	// a company-only row one per role. Default 1,000,000.
	MaxLookups int
	// MaxColumns caps the CSV columns (and the keys of a JSON row's "extra").
	// Default 256.
	MaxColumns int
	// MaxCellBytes caps one cell or JSON row value, before trimming. Default 4096.
	MaxCellBytes int
	// MaxRoles caps the roles option. Default 50.
	MaxRoles int
	// MaxErrors caps the details collected before giving up. Default 100.
	MaxErrors int
}

// DefaultLimits returns the limits the API uses unless configured otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:     64 << 20,
		MaxLookups:   1_000_000,
		MaxColumns:   256,
		MaxCellBytes: 4096,
		MaxRoles:     50,
		MaxErrors:    100,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxLookups <= 0 {
		l.MaxLookups = d.MaxLookups
	}
	if l.MaxColumns <= 0 {
		l.MaxColumns = d.MaxColumns
	}
	if l.MaxCellBytes <= 0 {
		l.MaxCellBytes = d.MaxCellBytes
	}
	if l.MaxRoles <= 0 {
		l.MaxRoles = d.MaxRoles
	}
	if l.MaxErrors <= 0 {
		l.MaxErrors = d.MaxErrors
	}
	return l
}
