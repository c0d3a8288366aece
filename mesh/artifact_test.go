package mesh

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeFilename(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"reports/r.md", "reports/r.md"},
		{"./a//b/./c.txt", "a/b/c.txt"},
		{"a/", "a"},
		{"résumé.pdf", "résumé.pdf"},
		{"..a/b..", "..a/b.."},
		{"a b/c d", "a b/c d"},
		{"../x", ""},
		{"/etc/passwd", ""},
		{"a/../../b", ""},
		{"a/..", ""},
		{"..", ""},
		{".", ""},
		{"./", ""},
		{"//", ""},
		{"", ""},
		{`a\b`, ""},
		{`C:\x`, ""},
		{"c:x", ""},
		{"./C:/Windows/x", ""},
		{".//c:", ""},
		{"a\x00b", ""},
		{"a\tb", ""},
		{"a\x7fb", ""},
		{strings.Repeat("n", 512), strings.Repeat("n", 512)},
		{strings.Repeat("n", 513), ""},
	}
	for _, c := range cases {
		got, err := NormalizeFilename(c.in)
		if c.want == "" {
			if err == nil || !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("NormalizeFilename(%q) = %q, %v; want INVALID_REQUEST", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("NormalizeFilename(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzNormalizeFilename: whatever a runtime sends, an accepted name stays
// inside the workspace — relative, no ".." or "." segment, no empty segment,
// no backslash or control character — and normalizing it again changes nothing.
func FuzzNormalizeFilename(f *testing.F) {
	for _, s := range []string{"reports/r.md", "./a//b", "../x", "/etc/passwd", `C:\x`, "a/..", "a/./b/", "résumé.pdf", "a\x00b", "..", ".../x", "a/.../b", "\xff/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		out, err := NormalizeFilename(name)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Message == "" {
				t.Fatalf("error is not INVALID_REQUEST with a message: %#v", err)
			}
			return
		}
		if out == "" || len(out) > len(name) || len(out) > 512 {
			t.Fatalf("%q normalized to %q", name, out)
		}
		if strings.HasPrefix(out, "/") || strings.ContainsAny(out, `\`) || (len(out) > 1 && out[1] == ':') {
			t.Fatalf("%q normalized to a non-relative %q", name, out)
		}
		for _, seg := range strings.Split(out, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("%q normalized to %q with segment %q", name, out, seg)
			}
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("%q normalized to %q with a control character", name, out)
			}
		}
		if utf8.ValidString(name) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 %q normalized to invalid %q", name, out)
		}
		again, err := NormalizeFilename(out)
		if err != nil || again != out {
			t.Fatalf("normalizing %q again gave %q, %v", out, again, err)
		}
	})
}
