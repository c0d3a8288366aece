package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestThirdParty_ModulesAreThePinnedReleases: each vendored module is the
// file its README names, byte for byte (by SHA-256), its header names the
// pinned version, and the page serves it as JavaScript under its own name.
func TestThirdParty_ModulesAreThePinnedReleases(t *testing.T) {
	readme, err := embedded.ReadFile(thirdParty + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	// | `file` | `package` | version | … | `sha256` |
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([^`]+)` \\| ([0-9.]+) \\|.*\\| `([0-9a-f]{64})` \\|$")
	rows := row.FindAllStringSubmatch(string(readme), -1)
	if len(rows) != 2 {
		t.Fatalf("the README lists %d modules, want the 2 vendored:\n%s", len(rows), readme)
	}
	pages := New()
	for _, r := range rows {
		file, pkg, version, sum := r[1], r[2], r[3], r[4]
		body, err := embedded.ReadFile(thirdParty + "/" + file)
		if err != nil {
			t.Fatalf("%s (%s): %v", file, pkg, err)
		}
		if got := sha256.Sum256(body); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s is not the %s %s file the README names: SHA-256 %x, want %s", file, pkg, version, got, sum)
		}
		header, _, _ := strings.Cut(string(body), "\n\n")
		if !strings.Contains(header, " "+version+" ") && !strings.Contains(header, "v"+version+" ") {
			t.Errorf("%s's header does not name version %s:\n%s", file, version, header)
		}
		if !pages.HasAsset(file) {
			t.Fatalf("%s is not served", file)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/assets/"+file, nil)
		req.SetPathValue("file", file)
		pages.ServeAsset(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" || rec.Body.String() != string(body) {
			t.Errorf("GET /assets/%s: %d %q, %d bytes", file, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
		}
	}
	for _, name := range []string{"README.md", "marked.LICENSE", "dompurify.LICENSE", "dompurify.LICENSE-MPL"} {
		if _, err := embedded.ReadFile(thirdParty + "/" + name); err != nil {
			t.Errorf("%s is missing beside the modules: %v", name, err)
		}
		if pages.HasAsset(name) {
			t.Errorf("%s is served as a page asset", name)
		}
	}
}
