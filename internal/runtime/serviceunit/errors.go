package serviceunit

import "errors"

// Errors callers branch on with errors.Is.
var (
	// ErrInvalidSpec means the service cannot be described: a relative
	// executable, a malformed profile name, or a control character in an
	// argument, which neither format can carry.
	ErrInvalidSpec = errors.New("invalid service spec")
	// ErrNameConflict means the service file already exists for a different
	// profile whose ids share the same short prefixes; it is not overwritten.
	ErrNameConflict = errors.New("service file belongs to another profile")
	// ErrUnsupported means the platform has no supported service manager.
	ErrUnsupported = errors.New("no supported user service manager")
	// ErrNoServiceManager means the service manager is missing or cannot be
	// reached (no systemctl, or no user bus: a session without a user
	// manager, as under su or in a container). Nothing was installed.
	ErrNoServiceManager = errors.New("the user service manager is not available")
)
