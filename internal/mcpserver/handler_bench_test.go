package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/mcpserver"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// BenchmarkToolsList: a tools/list over Streamable HTTP, the server built
// for the request's key each time (the stateless handler's cost per request).
func BenchmarkToolsList(b *testing.B) {
	st := storetest.New(b)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}})
	p := service.Principal{Tenant: "acme", KeyID: "bench", Scopes: domain.Scopes}
	srv := httptest.NewServer(mcpserver.Handler(mcpserver.Config{Service: svc, MaxBudget: 1000},
		func(*http.Request) (service.Principal, bool) { return p, true }))
	b.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	for b.Loop() {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(res.Tools) != 13 {
			b.Fatalf("%d tools, %v", len(res.Tools), err)
		}
	}
}
