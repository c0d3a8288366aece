package provider

import (
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// minSecretLen is the shortest value treated as a secret. Shorter values
// ("1", "true") would blank out ordinary words without protecting anything.
const minSecretLen = 8

// redacted replaces a secret value in text that leaves the adapter.
const redacted = "[redacted]"

// secretNameParts mark an environment variable whose value is a credential.
var secretNameParts = []string{"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY"}

// isSecretName reports whether an environment variable's name says it holds
// a credential (ANTHROPIC_API_KEY, OPENCLAW_GATEWAY_TOKEN, API_SERVER_KEY).
func isSecretName(name string) bool {
	name = strings.ToUpper(name)
	if strings.HasSuffix(name, "_KEY") {
		return true
	}
	for _, part := range secretNameParts {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// redactor removes credential values from everything a provider sends back:
// output text, metadata, artifacts, progress and error messages. Credentials
// reach hosts through their environment, and a host may echo its
// environment, in an error message or because a task asked it to; what
// comes back is shown to whoever sent the task.
type redactor struct {
	secrets []string
}

// newRedactor collects the values of env's credential variables and extra
// secrets, longest first so that a secret containing another is replaced
// whole.
func newRedactor(env []string, extra ...string) redactor {
	var secrets []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && isSecretName(name) && len(value) >= minSecretLen {
			secrets = append(secrets, value)
		}
	}
	for _, s := range extra {
		if len(s) >= minSecretLen {
			secrets = append(secrets, s)
		}
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return redactor{secrets: slices.Compact(secrets)}
}

// minCutSecret is the shortest piece of a cut-off secret that is still
// replaced.
const minCutSecret = 6

// text returns s with every secret replaced, including a secret cut off
// where s was shortened: at its start (the tail of a host's stderr), at its
// end, or before an ellipsis.
func (r redactor) text(s string) string {
	for _, secret := range r.secrets {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, redacted)
		}
		s = redactCut(s, secret)
	}
	return s
}

// redactCut replaces the end of a secret at the start of s, and the start of
// a secret at the end of s or before an ellipsis.
func redactCut(s, secret string) string {
	for k := len(secret) - 1; k >= minCutSecret; k-- {
		if strings.HasPrefix(s, secret[len(secret)-k:]) {
			s = redacted + s[k:]
			break
		}
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "…")
		if i < 0 {
			b.WriteString(cutEnd(s, secret))
			return b.String()
		}
		b.WriteString(cutEnd(s[:i], secret))
		b.WriteString("…")
		s = s[i+len("…"):]
	}
}

// cutEnd replaces the start of secret at the end of s.
func cutEnd(s, secret string) string {
	for k := len(secret) - 1; k >= minCutSecret; k-- {
		if strings.HasSuffix(s, secret[:k]) {
			return s[:len(s)-k] + redacted
		}
	}
	return s
}

// err returns err with every secret replaced in its message, still
// wrapping err for errors.Is.
func (r redactor) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := r.text(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// value returns v with every secret replaced in its strings, recursively.
func (r redactor) value(v any) any {
	switch v := v.(type) {
	case string:
		return r.text(v)
	case map[string]any:
		for k, e := range v {
			v[k] = r.value(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = r.value(e)
		}
		return v
	case []adapterapi.ArtifactWrite:
		for i := range v {
			v[i].ContentText = r.text(v[i].ContentText)
		}
		return v
	}
	return v
}

// redactedError is an error whose message had a secret removed.
type redactedError struct {
	msg string
	err error
}

// Error returns the message without secrets.
func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the original error, for errors.Is.
func (e *redactedError) Unwrap() error { return e.err }
