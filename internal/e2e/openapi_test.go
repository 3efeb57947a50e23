package e2e_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/httpapi/openapitest"
)

var (
	checkerOnce sync.Once
	checker     *openapitest.Checker
)

// client is the HTTP client of the end-to-end tests: every answer it gets
// is checked against openapi.json (its status listed by the operation, its
// body allowed by the schema), and t fails on one that is not.
func client(t *testing.T) *http.Client {
	t.Helper()
	checkerOnce.Do(func() { checker = openapitest.New(t, httpapi.OpenAPIDocument()) })
	if checker == nil {
		t.Fatal("openapi.json could not be loaded (see the first test that failed)")
	}
	return &http.Client{Transport: checker.Transport(t, nil)}
}
