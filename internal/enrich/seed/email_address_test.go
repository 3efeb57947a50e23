package seed_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// An email object whose address is not an address is a malformed answer,
// a single call's (transient, outcome unknown) and a bulk row's alike:
// never delivered as an email.
func TestEmailNotAnAddressIsMalformed(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"n/a", "ada lovelace", "ada@acme.com; bob@acme.com", "ada@localhost"} {
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"email": %q, "confidence": 0.9, "verified": true}`, addr)
		})
		_, err := client(t, srv.URL, nil).Email(ctx(t), "https://platform.example/in/ada", "k")
		if e := vendorError(t, err, enrich.ClassTransient); !e.OutcomeUnknown || e.Code != "malformed_response" {
			t.Errorf("email %q: %+v, want a malformed answer", addr, e)
		}
	}
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results": [{"index": 0, "profile": {"profile_url": "u0"}, "email": {"email": "n/a"}},
			{"index": 1, "profile": {"profile_url": "u1"}, "email": {"email": "ada@acme.com"}}]}`)
	})
	rows := []enrich.ProfileQuery{{ProfileURL: "https://platform.example/in/r0"}, {ProfileURL: "https://platform.example/in/r1"}}
	res, err := client(t, srv.URL, nil).Bulk(ctx(t), rows, []domain.Stage{domain.StageEmail}, "k")
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Items[0].Err; e == nil || e.Code != "malformed_result" || res.Items[0].Email != nil {
		t.Errorf("bulk row 0 = %+v, want a malformed result", res.Items[0])
	}
	if it := res.Items[1]; it.Err != nil || it.Email == nil || it.Email.Address != "ada@acme.com" {
		t.Errorf("bulk row 1 = %+v, want its email", it)
	}
}
