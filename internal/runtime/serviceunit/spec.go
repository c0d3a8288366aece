package serviceunit

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Spec is what the service runs: Executable start --profile Profile
// [--config ProfileFile], in WorkingDirectory with Path.
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
	// WorkingDirectory is the absolute folder the service runs in (the
	// user's home); empty leaves the service manager's default, "/".
	WorkingDirectory string
	// Path is the PATH the service runs with, absolute folders only: a
	// service manager gives its services a short PATH of its own, without
	// the folders the user's shell adds (~/.local/bin, npm's global
	// folder…), where the agent hosts' programs are. Empty leaves the
	// manager's default.
	Path string
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
	if s.WorkingDirectory != "" && !filepath.IsAbs(s.WorkingDirectory) {
		return fmt.Errorf("%w: working directory %q is not an absolute path", ErrInvalidSpec, s.WorkingDirectory)
	}
	for _, dir := range filepath.SplitList(s.Path) {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("%w: PATH entry %q is not an absolute path", ErrInvalidSpec, dir)
		}
	}
	if strings.ContainsFunc(s.WorkingDirectory+s.Path, unicode.IsControl) {
		return fmt.Errorf("%w: the working directory or PATH contains a control character", ErrInvalidSpec)
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

// ServicePath is the PATH a service gets from a shell's PATH: its absolute
// folders, each once. Relative entries (".", an empty one) would name
// other folders in the service than in the shell.
func ServicePath(shellPath string) string {
	var dirs []string
	for _, dir := range filepath.SplitList(shellPath) {
		if filepath.IsAbs(dir) && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}
