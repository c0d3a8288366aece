package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestDocs_APINamesEveryRunFailureReason: docs/api.md names every code a
// failed run's error can carry, from the one table of them.
func TestDocs_APINamesEveryRunFailureReason(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mesh.Reasons) < 20 {
		t.Fatalf("the table of reasons holds %d; the runtime's and the adapter's are missing", len(mesh.Reasons))
	}
	for _, r := range mesh.Reasons {
		if !strings.Contains(string(b), "`"+r.Code+"`") {
			t.Errorf("docs/api.md does not name %s (%s)", r.Code, r.RecordedBy)
		}
	}
}
