package openapitest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/httpapi/openapitest"
)

// openapi.json is valid OpenAPI, as kin-openapi reads it.
func TestDocumentIsValid(t *testing.T) {
	t.Parallel()
	if _, err := openapitest.Document(httpapi.OpenAPIDocument()); err != nil {
		t.Fatal(err)
	}
}

// The checker refuses an answer the document does not allow: a status the
// operation does not list, a body of the wrong shape; it passes one it allows.
func TestCheckerRefusesWhatTheDocumentDoesNot(t *testing.T) {
	t.Parallel()
	c := openapitest.New(t, httpapi.OpenAPIDocument())
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/v1/jobs/00000000-0000-0000-0000-000000000000", nil)
	json := http.Header{"Content-Type": {"application/json"}}
	for _, c2 := range []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusTeapot, `{}`, "status is not supported"},
		{http.StatusNotFound, `{"error": {"code": 404, "message": "no such job"}}`, "code"},
		{http.StatusNotFound, `{"error": {"code": "not_found", "message": "no such job"}}`, ""},
	} {
		err := c.Check(req, c2.status, json, []byte(c2.body))
		switch {
		case c2.want == "" && err != nil:
			t.Errorf("%d %s: %v", c2.status, c2.body, err)
		case c2.want != "" && (err == nil || !strings.Contains(err.Error(), c2.want)):
			t.Errorf("%d %s: %v, want an error naming %q", c2.status, c2.body, err, c2.want)
		}
	}
}
