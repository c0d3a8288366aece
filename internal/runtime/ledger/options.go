package ledger

import (
	"encoding/json"
	"time"
)

// Option configures a Ledger.
type Option func(*Ledger)

// WithSecrets registers strings that must never reach the ledger, typically
// the runtime token: an entry containing one, raw or JSON-escaped, is refused
// with ErrSecret. Empty strings are ignored, since they would match anything.
func WithSecrets(secrets ...string) Option {
	return func(l *Ledger) {
		for _, s := range secrets {
			if s == "" {
				continue
			}
			l.secrets = append(l.secrets, []byte(s))
			if escaped, err := json.Marshal(s); err == nil {
				l.secrets = append(l.secrets, escaped[1:len(escaped)-1])
			}
		}
	}
}

// WithClock sets the source of entry timestamps; default time.Now.
func WithClock(now func() time.Time) Option {
	return func(l *Ledger) { l.now = now }
}
