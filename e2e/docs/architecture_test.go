package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the module path go list prints before each package.
const module = "github.com/a2amesh/a2amesh"

// TestDocs_ArchitectureMapsEveryPackage: the package map of
// docs/architecture.md names, in the first column of its tables, every
// package `go list ./...` prints, and no package that does not exist, so the
// map follows every package added, moved or removed.
func TestDocs_ArchitectureMapsEveryPackage(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Fields(string(out)) {
		if line == module {
			listed["."] = true
			continue
		}
		listed[strings.TrimPrefix(line, module+"/")] = true
	}
	if !listed["bus"] || !listed["services/taskqueue"] {
		t.Fatalf("go list printed no package this test knows: %s", out)
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	mapped := packageMap(t, string(doc))
	for pkg := range listed {
		if !mapped[pkg] {
			t.Errorf("docs/architecture.md's package map does not name %s", pkg)
		}
	}
	var unknown []string
	for pkg := range mapped {
		if !listed[pkg] {
			unknown = append(unknown, pkg)
		}
	}
	slices.Sort(unknown)
	for _, pkg := range unknown {
		t.Errorf("docs/architecture.md's package map names %s, which is no package of the module", pkg)
	}
}

// packageMap returns the packages the first column of the tables in the
// document's "## Packages" section names, each in backquotes.
func packageMap(t *testing.T, doc string) map[string]bool {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Packages" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	mapped := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			mapped[m[1]] = true
		}
	}
	if len(mapped) == 0 {
		t.Fatal("docs/architecture.md's package map names no package")
	}
	return mapped
}
