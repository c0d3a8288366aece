package runtimeengine

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeEnvFile(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adapter.env")
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadAdapterEnvFile_LinesCommentsExportAndQuotes(t *testing.T) {
	path := writeEnvFile(t, "# the OpenClaw gateway\nOPENCLAW_GATEWAY_TOKEN=oc-secret-1\n\nexport HTTPS_PROXY=\"http://proxy:3128\"\n  NAME = 'two words'  \nEMPTY=\n", 0o600)
	got, err := ReadAdapterEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"OPENCLAW_GATEWAY_TOKEN=oc-secret-1", "HTTPS_PROXY=http://proxy:3128", "NAME=two words", "EMPTY="}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, err := ReadAdapterEnvFile(filepath.Join(t.TempDir(), "none.env")); err != nil || got != nil {
		t.Fatalf("a missing file: %q, %v; want nothing", got, err)
	}
}

func TestReadAdapterEnvFile_RefusesWhatItMustNotTakeWithoutShowingValues(t *testing.T) {
	cases := []struct {
		name, text string
		mode       os.FileMode
		want       string
	}{
		{"readable by others", "OPENCLAW_GATEWAY_TOKEN=oc-secret-2\n", 0o644, "chmod 600"},
		{"readable by the group", "OPENCLAW_GATEWAY_TOKEN=oc-secret-2\n", 0o640, "chmod 600"},
		{"no equals sign", "oc-secret-2\n", 0o600, "line 1: want KEY=VALUE"},
		{"bad name", "# c\n1KEY=oc-secret-2\n", 0o600, "line 2: want KEY=VALUE"},
		{"the runtime's token", "A2A_RUNTIME_TOKEN=oc-secret-2\n", 0o600, "runtime's own"},
		{"a pairing code", "A2A_PAIRING_CODE=oc-secret-2\n", 0o600, "runtime's own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadAdapterEnvFile(writeEnvFile(t, c.text, c.mode))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "oc-secret-2") {
				t.Fatalf("the error shows a value: %v", err)
			}
		})
	}
}
