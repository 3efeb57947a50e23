package config

import "errors"

// Ledger configures cmd/ledger, which prints the books.
type Ledger struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL, default
	// DefaultDatabaseURL).
	DatabaseURL string
	// VendorKey is only hashed into the account id (ENRICHQ_VENDOR_KEY,
	// default "": then -account is required). A secret: never printed.
	VendorKey string
	// VendorMonthlyCredits is the monthly allowance shown beside the usage
	// (ENRICHQ_VENDOR_MONTHLY_CREDITS, default 0: none).
	VendorMonthlyCredits int64
}

// LedgerFromEnv maps the environment (getenv: os.Getenv in production) onto
// the ledger's defaults and validates the result.
func LedgerFromEnv(getenv func(string) string) (Ledger, error) {
	c := Ledger{DatabaseURL: DefaultDatabaseURL}
	err := load(getenv, func(r *reader) {
		r.str("DATABASE_URL", &c.DatabaseURL)
		r.str("ENRICHQ_VENDOR_KEY", &c.VendorKey)
		r.int64("ENRICHQ_VENDOR_MONTHLY_CREDITS", &c.VendorMonthlyCredits)
	}, func() error { return c.validate() })
	return c, err
}

func (c Ledger) validate() error {
	return errors.Join(inRange("ENRICHQ_VENDOR_MONTHLY_CREDITS", c.VendorMonthlyCredits, 0, 1<<50))
}

// VendorAccount is the vendor key's id ("" without a key).
func (c Ledger) VendorAccount() string { return VendorAccount(c.VendorKey) }

// Allowance is the monthly allowance, nil for none.
func (c Ledger) Allowance() *int64 {
	return Vendor{MonthlyCredits: c.VendorMonthlyCredits}.Allowance()
}
