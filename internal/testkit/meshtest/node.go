package meshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodePackage returns a folder holding the npm package set up in src (a
// folder with package.json, its lock file and scripts) with its
// node_modules: src itself when npm ci already ran there (CI does), else a
// temporary copy of files installed with npm ci from the lock file. probe is
// a dependency's name whose package.json shows node_modules is in place.
func NodePackage(t testing.TB, src, probe string, files ...string) string {
	t.Helper()
	src, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "node_modules", probe, "package.json")); err == nil {
		return src
	}
	dir := t.TempDir()
	for _, f := range append([]string{"package.json", "package-lock.json"}, files...) {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	return dir
}
