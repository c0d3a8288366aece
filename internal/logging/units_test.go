package logging

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// durField is a duration logged with zerolog's Dur, which writes a bare
// number of milliseconds.
var durField = regexp.MustCompile(`\.\s*Dur\("([a-z_]+)"`)

// TestLogs_EveryDurationNamesItsUnit: a duration in a log line is a number
// of milliseconds (zerolog's Dur), so its field's name says so (_ms): a
// reader of "startup": 178.69 cannot tell the unit.
func TestLogs_EveryDurationNamesItsUnit(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range durField.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !strings.HasSuffix(m[1], "_ms") {
				t.Errorf("%s logs the duration %q without its unit: name it %s_ms", path, m[1], m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no duration logged anywhere: the walk is off")
	}
}
