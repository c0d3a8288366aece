package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/meshapi"
)

// TestCommands_ReachTheAPIThroughTheTableOfOperations: the commands send
// each operation to the route its row of meshapi's table gives, so no
// file of the program spells a route of the table itself: a route that
// moves, or a request field that is renamed, changes in one place.
func TestCommands_ReachTheAPIThroughTheTableOfOperations(t *testing.T) {
	prefixes := map[string]bool{}
	for _, op := range meshapi.Ops() {
		if op.REST == nil {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(op.REST.Path, "/"), "/")
		prefixes["/"+first] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for p := range prefixes {
				if s == p || strings.HasPrefix(s, p+"/") || strings.HasPrefix(s, p+"?") {
					t.Errorf("%s: %q spells a route of the table of operations; send the operation (meshapi.Send, restclient.Client.Call or Route)", fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
	}
}
