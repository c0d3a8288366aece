package mesh

import (
	"regexp"

	"github.com/google/uuid"
)

// NewID returns a new time-ordered identifier (UUID version 7). Sorting ids
// sorts by creation time, which list paging relies on.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidID reports whether s has the shape of an id this platform issues. Ids are
// used as bus subject tokens, so nothing else may reach a subject.
func ValidID(s string) bool {
	return idPattern.MatchString(s)
}
