package httpapi

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The doors (this package, the web page, the MCP server) reach Postgres and
// the job pipeline only through internal/service: none of their files
// imports the store or internal/jobs, and neither do the tests of the web
// page and the MCP server, which start the API with apitest. A door that
// did could answer differently from the others on money or tenancy. This
// package's own tests are the exception: they arrange what only a worker
// writes (rows' outcomes, the ledger's reservations) through the store.
func TestDoorsGoThroughTheService(t *testing.T) {
	t.Parallel()
	for _, f := range doorImports(t, false, ".", "../web", "../mcpserver") {
		t.Errorf("%s imports %s: go through internal/service", f.file, f.path)
	}
	for _, f := range doorImports(t, true, "../web", "../mcpserver") {
		t.Errorf("%s imports %s: start the API with apitest", f.file, f.path)
	}
}

// forbiddenInDoors are the packages below the service.
var forbiddenInDoors = []string{
	"github.com/enrichq/enrichq/internal/store",
	"github.com/enrichq/enrichq/internal/jobs",
}

type doorImport struct{ file, path string }

// doorImports lists the imports of forbiddenInDoors in the Go files of
// dirs: their tests when tests, else the others.
func doorImports(t *testing.T, tests bool, dirs ...string) []doorImport {
	t.Helper()
	var found []doorImport
	fset := token.NewFileSet()
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") != tests {
				continue
			}
			name := filepath.Join(dir, e.Name())
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			n++
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbiddenInDoors {
					if path == bad {
						found = append(found, doorImport{file: name, path: path})
					}
				}
			}
		}
		if n == 0 {
			t.Fatalf("no Go files in %s: the check would pass on nothing", dir)
		}
	}
	return found
}
