package enrich_test

import (
	"testing"

	"github.com/enrichq/enrichq/internal/enrich"
)

func TestWorksAt(t *testing.T) {
	t.Parallel()
	byDomain := enrich.ProfileQuery{Name: "Jane Doe", Domain: "acme.com"}
	byName := enrich.ProfileQuery{Name: "Jane Doe", Company: "Acme GmbH"}
	ibmByName := enrich.ProfileQuery{Name: "Jane Doe", Company: "International Business Machines"}
	for _, tc := range []struct {
		q    enrich.ProfileQuery
		e    enrich.Employer
		want bool
	}{
		{byDomain, enrich.Employer{Websites: []string{"https://www.acme.com/"}}, true},
		{byDomain, enrich.Employer{Websites: []string{"de.acme.com"}}, true},
		{byDomain, enrich.Employer{Names: []string{"Acme Corp"}}, true},
		{enrich.ProfileQuery{Name: "j", Domain: "globex-corp.com"}, enrich.Employer{Names: []string{"Globex"}}, true},
		{enrich.ProfileQuery{Name: "j", Domain: "acme.co.uk"}, enrich.Employer{Names: []string{"ACME Ltd."}}, true},
		{byDomain, enrich.Employer{}, true}, // names no employer
		{byDomain, enrich.Employer{Websites: []string{"", "globex.com"}, Names: []string{"Globex"}}, false},
		{byDomain, enrich.Employer{Names: []string{"Initech"}}, false},
		{byName, enrich.Employer{Names: []string{"acme"}}, true},
		{byName, enrich.Employer{Names: []string{"Acme Labs Inc"}}, true},
		{byName, enrich.Employer{Websites: []string{"acme.de"}}, true},
		{byName, enrich.Employer{Names: []string{"Initech"}, Websites: []string{"initech.com"}}, false},
		{enrich.ProfileQuery{Email: "j@acme.com"}, enrich.Employer{Names: []string{"Initech"}}, true}, // no company asked
		// A company known by its initials, three letters or more, either way round.
		{ibmByName, enrich.Employer{Names: []string{"IBM"}}, true},
		{ibmByName, enrich.Employer{Websites: []string{"https://www.ibm.com"}}, true},
		{enrich.ProfileQuery{Name: "j", Company: "IBM"}, enrich.Employer{Names: []string{"International Business Machines Corporation"}}, true},
		{enrich.ProfileQuery{Name: "j", Domain: "ibm.com"}, enrich.Employer{Names: []string{"International Business Machines"}}, true},
		{enrich.ProfileQuery{Name: "j", Company: "American Telephone and Telegraph"}, enrich.Employer{Names: []string{"AT&T Inc."}}, true},
		{ibmByName, enrich.Employer{Names: []string{"IBX"}, Websites: []string{"ibx.com"}}, false},
		{ibmByName, enrich.Employer{Names: []string{"IB"}}, false},
		{enrich.ProfileQuery{Name: "j", Company: "Hewlett Packard"}, enrich.Employer{Names: []string{"HP"}}, false}, // two letters
		{enrich.ProfileQuery{Name: "j", Company: "IBM"}, enrich.Employer{Names: []string{"Ibis Media"}}, false},
		{enrich.ProfileQuery{Name: "j", Company: "Bank of New York"}, enrich.Employer{Websites: []string{"bny.com"}}, true},
	} {
		if got := enrich.WorksAt(tc.q, tc.e); got != tc.want {
			t.Errorf("WorksAt(%+v, %+v) = %v", tc.q, tc.e, got)
		}
	}
}
