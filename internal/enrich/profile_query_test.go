package enrich_test

import (
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

func TestProfileQueryKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q       enrich.ProfileQuery
		want    domain.InputKind
		errHint string // part of Validate's message when want is ""
	}{
		{enrich.ProfileQuery{ProfileURL: "u"}, domain.InputProfileURL, ""},
		{enrich.ProfileQuery{Email: "a@b.c"}, domain.InputEmail, ""},
		{enrich.ProfileQuery{Name: "CTO", Company: "Acme"}, domain.InputNameCompany, ""},
		{enrich.ProfileQuery{Name: "CTO", Domain: "acme.com"}, domain.InputNameDomain, ""},
		{enrich.ProfileQuery{Name: "CTO", Company: "Acme", Domain: "acme.com"}, "", "not both"},
		{enrich.ProfileQuery{Domain: "acme.com"}, "", "a name goes with"},
		{enrich.ProfileQuery{Name: "CTO"}, "", "a name goes with"},
		{enrich.ProfileQuery{Name: "CTO", Domain: " "}, "", "a name goes with"},
		{enrich.ProfileQuery{Email: "a@b.c", Domain: "acme.com"}, "", "exactly one"},
		{enrich.ProfileQuery{}, "", "exactly one"},
	}
	for _, tt := range tests {
		if got := tt.q.Kind(); got != tt.want {
			t.Errorf("%+v: Kind() = %q, want %q", tt.q, got, tt.want)
		}
		err := tt.q.Validate()
		if (err == nil) != (tt.want != "") || err != nil && !strings.Contains(err.Error(), tt.errHint) {
			t.Errorf("%+v: Validate() = %v, want an error containing %q: %v", tt.q, err, tt.errHint, tt.want == "")
		}
	}
	c := enrich.DefaultCosts()
	if got := c.ProfileCost(domain.InputNameDomain); got != c.ProfileBySearch {
		t.Errorf("a domain lookup costs %d, want the search price %d", got, c.ProfileBySearch)
	}
}
