package meshtest

import (
	"strings"
	"sync"
)

// Secrets are the credentials a test handed out (passwords, seeds, pairing
// codes, tokens), to hide in the output it shows when it fails. The zero
// value is ready; it is safe for concurrent use.
type Secrets struct {
	mu   sync.Mutex
	list []string
}

// Add records credentials to hide; empty ones are ignored.
func (s *Secrets) Add(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, secret := range secrets {
		if secret != "" {
			s.list = append(s.list, secret)
		}
	}
}

// Mask replaces every recorded credential in text.
func (s *Secrets) Mask(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, secret := range s.list {
		text = strings.ReplaceAll(text, secret, "[credential]")
	}
	return text
}
