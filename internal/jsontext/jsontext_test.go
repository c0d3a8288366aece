package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "run_01", "a b", `"quoted"`, `back\slash`, "<b>&", "\n\t", "é", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendString(%q) = %s, want x%s", s, got, want)
		}
		if Plain(s) && string(want) != `"`+s+`"` {
			t.Fatalf("Plain(%q), but encoding/json writes %s", s, want)
		}
	})
}
