package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocs_EveryDirectDependencyIsExplained: each module go.mod requires
// directly is named in the README's dependency table, which says why it is
// there, and the table names no module go.mod does not require.
func TestDocs_EveryDirectDependencyIsExplained(t *testing.T) {
	root := filepath.Join("..", "..")
	direct := map[string]bool{}
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inRequire := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			inRequire = true
		case line == ")":
			inRequire = false
		case inRequire && line != "" && !strings.Contains(line, "// indirect"):
			direct[strings.Fields(line)[0]] = true
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "## Dependencies")
	if !ok {
		t.Fatal("README.md has no Dependencies section")
	}
	named := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, part := range strings.Split(first, "`") {
			if strings.Contains(part, ".") && strings.Contains(part, "/") && !strings.ContainsAny(part, " ()") {
				named[part] = true
			}
		}
	}
	for m := range direct {
		if !named[m] {
			t.Errorf("go.mod requires %s, which the README's dependency table does not explain", m)
		}
	}
	for m := range named {
		if !direct[m] {
			t.Errorf("the README's dependency table names %s, which go.mod does not require directly", m)
		}
	}
}
