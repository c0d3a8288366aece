package sealed

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// A box opens with its runtime's key only: another runtime's key, or the
// right key under another runtime's id, is ErrOtherRecipient; no key is
// ErrNoKey; a tampered box ErrUnreadable. No field of the box holds the value.
func TestOpen_OnlyTheRuntimeSealedForOpens(t *testing.T) {
	pub, seed, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	_, otherSeed, _ := NewKey()
	box, err := Seal(map[string]string{"API_TOKEN": "value-3a9c"}, "rt-1", pub)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(box.Box+box.Sender+box.Recipient, "value-3a9c") {
		t.Fatal("the box holds the value in the clear")
	}
	vars, err := Open(box, "rt-1", seed)
	if err != nil || vars["API_TOKEN"] != "value-3a9c" {
		t.Fatalf("open: %v (%d variables)", err, len(vars))
	}
	for name, tc := range map[string]struct {
		runtime, seed string
		want          error
	}{
		"another runtime's key": {"rt-1", otherSeed, ErrOtherRecipient},
		"another runtime's id":  {"rt-2", seed, ErrOtherRecipient},
		"no key":                {"rt-1", "", ErrNoKey},
	} {
		if _, err := Open(box, tc.runtime, tc.seed); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	tampered := *box
	tampered.Box = box.Box[:len(box.Box)-8] + "AAAAAAA="
	if _, err := Open(&tampered, "rt-1", seed); !errors.Is(err, ErrUnreadable) {
		t.Errorf("tampered: %v, want ErrUnreadable", err)
	}
}

// Check names every forbidden variable, sorted, and quotes no value.
func TestCheck_NamesForbiddenVariables(t *testing.T) {
	err := Check(map[string]string{"PYTHONPATH": "v-1", "DYLD_LIBRARY_PATH": "v-2", "ENV": "v-3", "ok_name": "v-4"})
	e := mesh.AsError(err)
	if e.Code != mesh.CodeInvalidRequest || !strings.Contains(e.Message, "DYLD_LIBRARY_PATH, ENV, PYTHONPATH") || strings.Contains(e.Message, "v-") || strings.Contains(e.Message, "ok_name") {
		t.Fatalf("%v", err)
	}
	if err := Check(map[string]string{"VARIABLE_NAME": "value"}); err != nil {
		t.Fatalf("an allowed variable: %v", err)
	}
}
