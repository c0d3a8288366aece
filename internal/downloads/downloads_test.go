package downloads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFiles_OnlyWellFormedProgramLinesAreOffered(t *testing.T) {
	dir := t.TempDir()
	sum := strings.Repeat("a", 64)
	lines := []string{
		sum + "  a2a-runtime_linux_amd64",
		sum + " *a2a-adapter_darwin_arm64",
		sum + "  ../owner.token",
		sum + "  a2a-platform_linux_amd64",
		"short  a2a-runtime_linux_arm64",
		"garbage",
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := New(dir).Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Name != "a2a-adapter_darwin_arm64" || files[1].Name != "a2a-runtime_linux_amd64" {
		t.Fatalf("offered %+v", files)
	}
}

func TestScript_RefusesAURLThatWouldBreakOutOfItsQuotes(t *testing.T) {
	c := New(t.TempDir())
	for _, u := range []string{`http://x"; rm -rf ~; "`, "http://x/$(id)", "http://x/`id`", "file:///etc", "http://x y"} {
		if _, err := c.Script(u); err == nil {
			t.Errorf("script rendered for %q", u)
		}
	}
	script, err := c.Script("https://mesh.example.com:8443/")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `base="https://mesh.example.com:8443"`) || !strings.Contains(string(script), "make dist") {
		t.Fatalf("script:\n%s", script)
	}
}
