package docs

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
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

// TestDocs_WebPageLibrariesAreTheVendoredOnes: the README's table of the
// web page's libraries names the packages and versions that are vendored
// (the third-party README, whose files a test of the web package checks by
// hash) and that the fetch script pins.
func TestDocs_WebPageLibrariesAreTheVendoredOnes(t *testing.T) {
	root := filepath.Join("..", "..")
	web := filepath.Join(root, "services", "gateway", "web")
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	_, readme, ok := strings.Cut(read(filepath.Join(root, "README.md")), "### The web page's libraries")
	if !ok {
		t.Fatal("README.md has no section on the web page's libraries")
	}
	listed := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([0-9.]+) \\|").FindAllStringSubmatch(readme, -1) {
		listed[m[1]] = m[2]
	}
	vendored := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `[^`]+` \\| `([a-z0-9-]+)` \\| ([0-9.]+) \\|").FindAllStringSubmatch(read(filepath.Join(web, "assets", "third_party", "README.md")), -1) {
		vendored[m[1]] = m[2]
	}
	pinned := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z]+)_VERSION=([0-9.]+)$`).FindAllStringSubmatch(read(filepath.Join(web, "fetch-third-party.sh")), -1) {
		pinned[strings.ToLower(m[1])] = m[2]
	}
	if len(vendored) == 0 || !maps.Equal(listed, vendored) || !maps.Equal(pinned, vendored) {
		t.Fatalf("the web page's libraries disagree: README %v, vendored %v, fetch script %v", listed, vendored, pinned)
	}
}
