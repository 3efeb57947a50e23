package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3 document of this API. openapi_test.go keeps it
// true: every route of routes.go is in it and every path in it is a route,
// and its schemas name the fields of the bodies the handlers write.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI is GET /openapi.json; it needs no API key.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDoc)
}

// OpenAPIDocument is the OpenAPI document GET /openapi.json serves (a copy),
// for tests that check answers against it (package openapitest).
func OpenAPIDocument() []byte { return append([]byte(nil), openAPIDoc...) }
