package provider

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "OPENCLAW_GATEWAY_TOKEN": true, "API_SERVER_KEY": true,
		"CLAUDE_CODE_OAUTH_TOKEN": true, "OPENCLAW_GATEWAY_PASSWORD": true, "aws_secret_access_key": true,
		"PATH": false, "HOME": false, "A2A_OUTPUT_DIR": false, "GOOGLE_GENAI_USE_VERTEXAI": false, "KEYBOARD": false,
	} {
		if got := isSecretName(name); got != want {
			t.Errorf("isSecretName(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestRedactor_RemovesSecretsCutOffWhereTextWasShortened(t *testing.T) {
	r := newRedactor([]string{"HOST_TOKEN=tok-0123456789abcdef"})
	tests := []struct{ in, want string }{
		{"789abcdef and the rest of a stderr tail", "[redacted] and the rest of a stderr tail"},
		{"an answer ending in tok-0123", "an answer ending in [redacted]"},
		{`garbage: "Authorization: tok-01234…"`, `garbage: "Authorization: [redacted]…"`},
		{"abc tok-0123456789abcdef… tok-0", "abc [redacted]… tok-0"},
		{"short pieces like 89abc stay", "short pieces like 89abc stay"},
	}
	for _, tt := range tests {
		if got := r.text(tt.in); got != tt.want {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactor_RemovesSecretsEverywhereTheyCouldLeave(t *testing.T) {
	r := newRedactor([]string{"MY_API_KEY=abcdefgh12345678", "SHORT_TOKEN=1234", "PATH=/usr/bin:/bin"}, "extra-secret-99")
	if got := r.text("key abcdefgh12345678, extra-secret-99, 1234, /usr/bin"); got != "key [redacted], [redacted], 1234, /usr/bin" {
		t.Fatalf("text: %q", got)
	}
	out := r.value(map[string]any{
		"text":     "abcdefgh12345678",
		"metadata": map[string]any{"list": []any{"x extra-secret-99"}},
		"artifacts": []adapterapi.ArtifactWrite{
			{Filename: "a.txt", ContentText: "key=abcdefgh12345678"},
		},
	}).(map[string]any)
	if fmt.Sprint(out) != fmt.Sprint(map[string]any{
		"text":      redacted,
		"metadata":  map[string]any{"list": []any{"x " + redacted}},
		"artifacts": []adapterapi.ArtifactWrite{{Filename: "a.txt", ContentText: "key=" + redacted}},
	}) {
		t.Fatalf("value: %v", out)
	}
	err := r.err(fmt.Errorf("stopped with abcdefgh12345678: %w", context.Canceled))
	if err.Error() != "stopped with [redacted]: context canceled" || !errors.Is(err, context.Canceled) {
		t.Fatalf("err: %v", err)
	}
}
