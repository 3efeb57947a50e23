package pdl_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/enrich"
)

// A record's email is its work_email, else its first personal email, each
// only if it is an address: a field of junk is no email, and the rest of
// the record is kept.
func TestEmailFieldsOfJunkSkipped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		work, personal string // JSON
		want, field    string
	}{
		{`"n/a"`, `["junk", "ada@home.example"]`, "ada@home.example", "personal_emails"},
		{`"ada lovelace"`, `["ada at home"]`, "", ""},
		{`"ada@acme.com"`, `["ada@home.example"]`, "ada@acme.com", "work_email"},
	} {
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"status":200,"likelihood":8,"data":{"linkedin_url":"platform.example/in/ada","job_title":"cto","job_company_name":"acme",
				"work_email":%s,"personal_emails":%s}}`, c.work, c.personal)
		})
		a, err := adapter(t, srv.URL, nil).Ask(t.Context(), enrich.Question{Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/ada"}, Stages: all}, "")
		if err != nil {
			t.Fatal(err)
		}
		if a.Profile == nil || a.Profile.Role != "cto" {
			t.Errorf("work %s: profile %+v, want it kept", c.work, a.Profile)
		}
		switch {
		case c.want == "" && a.Email != nil:
			t.Errorf("work %s, personal %s: email %q, want none", c.work, c.personal, a.Email.Address)
		case c.want != "" && (a.Email == nil || a.Email.Address != c.want || !strings.Contains(string(a.Email.Raw), `"field":"`+c.field+`"`)):
			t.Errorf("work %s, personal %s: email %+v, want %s from %s", c.work, c.personal, a.Email, c.want, c.field)
		}
	}
}
