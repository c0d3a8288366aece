package mesh

import (
	"github.com/google/uuid"
)

// NewID returns a new time-ordered identifier (UUID version 7). Sorting ids
// sorts by creation time, which list paging relies on.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// ValidID reports whether s has the shape of an id this platform issues
// (a UUID in lower-case hex: 8-4-4-4-12). Ids are used as bus subject
// tokens, so nothing else may reach a subject. It is on every request's
// path, so it is a loop rather than a regular expression.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
