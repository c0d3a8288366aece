package secret

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

func TestNewToken_Carries256RandomBitsAfterItsPrefix(t *testing.T) {
	seen := map[string]bool{}
	for _, prefix := range []string{PrefixRuntime, PrefixOwner, PrefixConsumer, PrefixAPIKey} {
		for i := 0; i < 100; i++ {
			tok := NewToken(prefix)
			if !strings.HasPrefix(tok, prefix) {
				t.Fatalf("%q lacks prefix %q", tok, prefix)
			}
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, prefix))
			if err != nil || len(raw) != 32 {
				t.Fatalf("%q does not carry 32 bytes of base64url (%d, %v)", tok, len(raw), err)
			}
			if seen[tok] {
				t.Fatalf("token %q issued twice", tok)
			}
			seen[tok] = true
		}
	}
}

var codeShape = regexp.MustCompile(`^[A-HJ-NP-Z2-9]{5}(-[A-HJ-NP-Z2-9]{5}){3}$`)

func TestNewPairingCode_IsReadableAndNormalizesToItself(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 500; i++ {
		c := NewPairingCode()
		if !codeShape.MatchString(c) {
			t.Fatalf("code %q is not four groups of five unambiguous characters", c)
		}
		if seen[c] {
			t.Fatalf("code %q issued twice", c)
		}
		seen[c] = true
		for _, typed := range []string{c, strings.ToLower(c), strings.ReplaceAll(c, "-", ""), strings.ReplaceAll(c, "-", " "), " " + c + "\t", strings.ToLower(strings.ReplaceAll(c, "-", ""))} {
			if got := NormalizePairingCode(typed); got != c {
				t.Fatalf("NormalizePairingCode(%q) = %q, want %q", typed, got, c)
			}
		}
	}
}

func TestHashAndEqual(t *testing.T) {
	a, b := NewToken(PrefixRuntime), NewToken(PrefixRuntime)
	if h := Hash(a); len(h) != 64 || h != Hash(a) || h == Hash(b) || strings.Contains(h, a) {
		t.Fatalf("Hash(%q) = %q", a, h)
	}
	if !Equal(a, a) || Equal(a, b) || Equal(a, a[:len(a)-1]) || Equal("", a) {
		t.Fatal("Equal compares wrongly")
	}
}

// FuzzNormalizePairingCode: however a person types a code, normalizing is
// idempotent, drops every separator it ignores, never lower-cases ASCII, and
// treats dashes, spaces, tabs and ASCII case alike.
func FuzzNormalizePairingCode(f *testing.F) {
	for _, s := range []string{"ABCDE-FGHJK-LMNPQ-RSTUV", "abcde fghjk lmnpq rstuv", "ABCDEFGHJKLMNPQRSTUV", " abcde-fghjk-lmnpq-rstuv\t", "ABC", "", "----", "ÄBCDE-FGHJK-LMNPQ-RSTUV", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		n := NormalizePairingCode(code)
		if again := NormalizePairingCode(n); again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", code, n, again)
		}
		if strings.ContainsAny(n, " \t") {
			t.Fatalf("%q normalized to %q, which keeps a separator", code, n)
		}
		body := strings.ReplaceAll(n, "-", "")
		if strings.Count(n, "-") > 0 && (len(body) != 20 || !codeGroups(n)) {
			t.Fatalf("%q normalized to %q: dashes only belong between groups of a 20-character code", code, n)
		}
		for _, r := range n {
			if r < unicode.MaxASCII && unicode.IsLower(r) {
				t.Fatalf("%q normalized to %q with lowercase ASCII", code, n)
			}
		}
		alt := strings.NewReplacer("-", " ", "\t", "-").Replace(code)
		if NormalizePairingCode(alt) != n {
			t.Fatalf("separators matter: %q -> %q but %q -> %q", code, n, alt, NormalizePairingCode(alt))
		}
		if isASCII(code) && NormalizePairingCode(strings.ToLower(code)) != n {
			t.Fatalf("case matters: %q -> %q but lowercase -> %q", code, n, NormalizePairingCode(strings.ToLower(code)))
		}
	})
}

func codeGroups(n string) bool {
	parts := strings.Split(n, "-")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if len(p) != 5 {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
