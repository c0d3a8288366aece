package serviceunit

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
)

// Spec is what the service runs: Executable start --profile Profile
// [--config ProfileFile].
type Spec struct {
	// Executable is the absolute path of a2a-runtime; service managers do not
	// search PATH the way a shell does.
	Executable string
	// Profile is the profile name, "{agent_id}/{runtime_id}".
	Profile string
	// ProfileFile is passed as --config when set, for a profile file other
	// than the default.
	ProfileFile string
	// StartArgs are more arguments of start, after the profile: its flags
	// (--concurrency, --transport, --adapter ...) and, after "--", the
	// supervised adapter's arguments.
	StartArgs []string
}

// Args is the command line, executable first.
func (s Spec) Args() []string {
	args := []string{s.Executable, "start", "--profile", s.Profile}
	if s.ProfileFile != "" {
		args = append(args, "--config", s.ProfileFile)
	}
	return append(args, s.StartArgs...)
}

func (s Spec) validate() error {
	if !filepath.IsAbs(s.Executable) {
		return fmt.Errorf("%w: executable %q is not an absolute path", ErrInvalidSpec, s.Executable)
	}
	if s.ProfileFile != "" && !filepath.IsAbs(s.ProfileFile) {
		return fmt.Errorf("%w: profile file %q is not an absolute path", ErrInvalidSpec, s.ProfileFile)
	}
	if _, _, err := shortIDs(s.Profile); err != nil {
		return err
	}
	for _, arg := range s.Args() {
		if strings.ContainsFunc(arg, unicode.IsControl) {
			return fmt.Errorf("%w: argument %q contains a control character", ErrInvalidSpec, arg)
		}
	}
	return nil
}
