package mesh

import (
	"regexp"
	"testing"
)

// idShape is the shape ValidID accepts, as a regular expression.
var idShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestValidID(t *testing.T) {
	for _, s := range []string{
		NewID(), "00000000-0000-0000-0000-000000000000", "",
		"0192a7d4-5f3e-7c2b-9a1d-3e4f5a6b7c8D", "0192a7d4-5f3e-7c2b-9a1d-3e4f5a6b7c8",
		"0192a7d4-5f3e-7c2b-9a1d-3e4f5a6b7c8de", "0192a7d45f3e-7c2b-9a1d-3e4f5a6b7c8de",
		"0192a7d4-5f3e-7c2b-9a1d.3e4f5a6b7c8d", "0192a7d4-5f3e-7c2b-9a1d-3e4f5a6b7c8g",
		"mesh.rt.>-5f3e-7c2b-9a1d-3e4f5a6b7c8d",
	} {
		if got, want := ValidID(s), idShape.MatchString(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzValidID: ValidID accepts exactly the strings of an id's shape.
func FuzzValidID(f *testing.F) {
	f.Add(NewID())
	f.Add("0192a7d4-5f3e-7c2b-9a1d-3e4f5a6b7c8D")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidID(s), idShape.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, want %v", s, got, want)
		}
	})
}
