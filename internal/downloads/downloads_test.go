package downloads

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
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

// TestWithOwn_OffersTheProgramsBesideThePlatformOnlyWhenTheFolderOffersNone:
// the programs beside the platform are offered for its own system, with
// their checksums, when both are there and the downloads folder offers
// nothing; a folder with programs of its own decides alone.
func TestWithOwn_OffersTheProgramsBesideThePlatformOnlyWhenTheFolderOffersNone(t *testing.T) {
	own, folder := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := New(folder).WithOwn(own, "linux", "arm64")
	write(own, "a2a-runtime", "runtime program")
	if files, err := c.Files(); err != nil || len(files) != 0 {
		t.Fatalf("with the adapter missing: %+v, %v; want nothing offered", files, err)
	}
	write(own, "a2a-adapter", "adapter program")
	files, err := c.Files()
	if err != nil || len(files) != 2 || files[0].Name != "a2a-adapter_linux_arm64" || files[1].Name != "a2a-runtime_linux_arm64" {
		t.Fatalf("offered %+v, %v", files, err)
	}
	if want := sha256.Sum256([]byte("runtime program")); files[1].SHA256 != hex.EncodeToString(want[:]) {
		t.Fatalf("checksum %q", files[1].SHA256)
	}
	rec := httptest.NewRecorder()
	if !c.ServeFile(rec, httptest.NewRequest(http.MethodGet, "/downloads/"+SumsFile, nil), SumsFile) ||
		!strings.Contains(rec.Body.String(), files[1].SHA256+"  a2a-runtime_linux_arm64") {
		t.Fatalf("checksums served: %q", rec.Body.String())
	}
	rec = httptest.NewRecorder()
	if !c.ServeFile(rec, httptest.NewRequest(http.MethodGet, "/downloads/a2a-runtime_linux_arm64", nil), "a2a-runtime_linux_arm64") ||
		rec.Body.String() != "runtime program" {
		t.Fatalf("program served: %q", rec.Body.String())
	}
	if c.ServeFile(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/downloads/a2a-runtime_linux_amd64", nil), "a2a-runtime_linux_amd64") {
		t.Fatal("served a program of another system")
	}
	write(folder, SumsFile, strings.Repeat("b", 64)+"  a2a-runtime_darwin_arm64\n")
	if files, err := c.Files(); err != nil || len(files) != 1 || files[0].Name != "a2a-runtime_darwin_arm64" {
		t.Fatalf("with a folder offering programs: %+v, %v; want the folder's alone", files, err)
	}
}
