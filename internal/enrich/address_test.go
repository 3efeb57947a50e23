package enrich_test

import (
	"testing"

	"github.com/enrichq/enrichq/internal/enrich"
)

func TestAddressHost(t *testing.T) {
	for addr, want := range map[string]string{
		"ada.lovelace@acme.com":       "acme.com",
		"Ada@EU.Acme.COM":             "eu.acme.com",
		"ada+news@mail.acme.co.uk":    "mail.acme.co.uk",
		"":                            "",
		"n/a":                         "",
		"ada lovelace@acme.com":       "",
		"ada@acme":                    "",
		"@acme.com":                   "",
		"ada@@acme.com":               "",
		"ada@acme.com, bob@acme.com":  "",
		"Ada <ada@acme.com>":          "",
		"ada@acme.com\nbcc@evil.test": "",
		"ada@.com":                    "",
	} {
		if got := enrich.AddressHost(addr); got != want {
			t.Errorf("AddressHost(%q) = %q, want %q", addr, got, want)
		}
	}
}
