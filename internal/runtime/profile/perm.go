package profile

import (
	"fmt"
	"io/fs"
	"runtime"
)

// checkPrivate refuses a profile file other users can access: it holds the
// runtime token, and a readable token lets anyone on the machine impersonate
// the runtime (seed 001 §3: "chmod 600"). Windows has no such mode bits.
func checkPrivate(path string, mode fs.FileMode) error {
	if runtime.GOOS == "windows" || mode.Perm()&0o077 == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", ErrInsecureFile, path, mode.Perm(), path)
}
