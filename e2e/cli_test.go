package e2e

import (
	"strings"
	"testing"
)

// a2a-runtime answers misuse as a2a-platform does: a mistyped subcommand
// of a group exits non-zero naming the closest one and the help to read,
// and a wrong flag points to the command's help.
func TestRuntimeCLI_UnknownCommandsAndWrongFlagsAreErrorsThatSayWhatToDo(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	m := l.newMachine()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"profiles", "lst"}, []string{`unknown command "lst" for "a2a-runtime profiles"`, "did you mean list", "a2a-runtime profiles --help"}},
		{[]string{"service", "instal"}, []string{`unknown command "instal" for "a2a-runtime service"`, "did you mean install", "a2a-runtime service --help"}},
		{[]string{"status", "--jsn"}, []string{"unknown flag: --jsn", "a2a-runtime status --help"}},
		{[]string{"pair", "ONE", "TWO"}, []string{"one pairing code", "a2a-runtime pair --help"}},
	} {
		r := m.cli(c.args...)
		if r.code == 0 {
			t.Errorf("%v exited 0: %s", c.args, r)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v does not say %q: %s", c.args, want, r)
			}
		}
	}
}
