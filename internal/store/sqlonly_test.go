package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlStatement matches a string literal that opens an SQL statement.
var sqlStatement = regexp.MustCompile(`^\s*(SELECT\s|INSERT\s+INTO\s|UPDATE\s+\w+(\s+\w+)?\s+SET\s|DELETE\s+FROM\s|` +
	`WITH\s+(RECURSIVE\s+)?\w+(\s*\([^)]*\))?\s+AS\s|(CREATE|DROP|ALTER)\s+(DATABASE|TABLE|INDEX|SCHEMA|FUNCTION)\s|` +
	`TRUNCATE\s|VACUUM\b|ANALYZE\b|CHECKPOINT\b|COPY\s)`)

// notOurSQL are files whose SQL is not enrichq's: statements handed to
// another program, by why.
var notOurSQL = map[string]string{
	"dev/bench/ingest.go": "psql's own \\copy into a table of its own, timed as the baseline of an upload",
}

// Every SQL statement lives in internal/store (and internal/store/storetest
// for tests): elsewhere a statement would skip the store's error mapping and
// retries, and the schema and plan tests of this package would not see it.
func TestSQLOnlyInStore(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/store" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		files++
		if _, ok := notOurSQL[rel]; ok {
			return nil
		}
		for _, lit := range sqlLiterals(t, path) {
			t.Errorf("%s: SQL outside internal/store: %.80q", rel, lit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files looked at under %s", files, root)
	}
}

// sqlLiterals returns the string literals of a Go file that open an SQL statement.
func sqlLiterals(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if s, err := strconv.Unquote(lit.Value); err == nil && sqlStatement.MatchString(s) {
			out = append(out, s)
		}
		return true
	})
	return out
}

// The literals the check above looks for, and prose it must let be.
func TestSQLStatementPattern(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"SELECT count(*) FROM jobs":                     true,
		"\n\t\tSELECT state FROM job_rows":              true,
		"UPDATE jobs SET state = 'running'":             true,
		"UPDATE credit_ledger l SET expires_at = now()": true,
		"DELETE FROM lookup_claims":                     true,
		"INSERT INTO jobs (tenant) VALUES ($1)":         true,
		"WITH u AS (UPDATE job_rows SET state = $1)":    true,
		"WITH RECURSIVE hangs(rel) AS (SELECT 1)":       true,
		"CREATE DATABASE ":                              true,
		"DROP DATABASE IF EXISTS ":                      true,
		"CHECKPOINT":                                    true,
		"DELETE":                                        false, // http.MethodDelete
		"Select the rows to update":                     false,
		"with the key, as sent":                         false,
		"UPDATE failed: the job is gone":                false,
	} {
		if got := sqlStatement.MatchString(s); got != want {
			t.Errorf("%q: matched %v, want %v", s, got, want)
		}
	}
}

// The pool stays inside the store: no exported function or method of its
// non-test files hands out a *pgxpool.Pool.
func TestPoolNotExported(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			for _, res := range fn.Type.Results.List {
				if star, ok := res.Type.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Pool" {
						t.Errorf("%s: %s hands out the pool", path, fn.Name.Name)
					}
				}
			}
		}
	}
}
