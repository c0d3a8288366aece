package profile

import "errors"

// Errors callers branch on with errors.Is.
var (
	// ErrNoProfiles means there is no profile to use: the file does not exist
	// or holds none. The remedy is pairing (seed 001 §7.3), never creating a
	// new agent.
	ErrNoProfiles = errors.New("no local A2A connection profile found")
	// ErrProfileNotFound means a named profile (--profile or active_profile)
	// is not in the file.
	ErrProfileNotFound = errors.New("profile not found")
	// ErrAmbiguousProfile means several profiles exist and none is active; the
	// runtime never picks one at random (seed 000).
	ErrAmbiguousProfile = errors.New("several profiles and no active profile")
	// ErrInsecureFile means the profile file is readable or writable by other
	// users; it holds a runtime token, so it is not used.
	ErrInsecureFile = errors.New("profile file is accessible by other users")
	// ErrInvalidFile means the profile file is not valid JSON of the expected
	// shape.
	ErrInvalidFile = errors.New("invalid profile file")
	// ErrInvalidProfile means a profile lacks the identity its name is made of.
	ErrInvalidProfile = errors.New("invalid profile")
)
