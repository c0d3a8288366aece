// Package version says which build of A2A Mesh a program is, for --version,
// `a2a-runtime status` and the agent cards.
package version

import (
	"runtime"
	"runtime/debug"
)

// Override, when set at build time, is the version outright:
//
//	go build -ldflags "-X github.com/a2amesh/a2amesh/internal/version.Override=v1.2.0"
var Override string

// String is the program's version: Override when the build set it, else the
// module version the build info records (a tagged release, or Go's pseudo
// version of a VCS checkout), else "devel" and the VCS revision (with
// "-dirty" for uncommitted changes) when known.
func String() string {
	if Override != "" {
		return Override
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev[:min(12, len(rev))] + dirty
}

// Line is what --version prints after the program's name: the version, the
// Go release that built it and the system it runs on.
func Line() string {
	return String() + " (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
