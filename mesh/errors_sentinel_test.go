package mesh

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestErrors_EveryCodeHasASentinel: callers branch on errors.Is with a
// sentinel, never on a code's value, so every Code constant has one.
func TestErrors_EveryCodeHasASentinel(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	sentinels := map[string]bool{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gen.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, name := range vs.Names {
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" && gen.Tok == token.CONST {
					codes[name.Name] = true
				}
				if gen.Tok != token.VAR || i >= len(vs.Values) {
					continue
				}
				// &Error{Code: CodeX}
				if u, ok := vs.Values[i].(*ast.UnaryExpr); ok {
					if lit, ok := u.X.(*ast.CompositeLit); ok {
						for _, el := range lit.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok {
								if v, ok := kv.Value.(*ast.Ident); ok {
									sentinels[v.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found %d codes in errors.go; the parse is off", len(codes))
	}
	for code := range codes {
		if !sentinels[code] {
			t.Errorf("%s has no sentinel (var ErrX = &Error{Code: %s})", code, code)
		}
	}
	if !errors.Is(Errorf(CodeTimeout, "slow"), &Error{Code: CodeTimeout}) {
		t.Fatal("a sentinel does not match an error of its code")
	}
}
