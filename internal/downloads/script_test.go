package downloads

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// scriptRun is one run of the install script with sh, its programs fetched
// by a stand-in curl from a local folder.
type scriptRun struct {
	stdout, stderr string
	// fetched lists the URLs curl was asked for.
	fetched []string
	// installDir is A2A_MESH_INSTALL_DIR.
	installDir string
}

// offering returns a catalog offering a2a-runtime and a2a-adapter for this
// system, and the folder holding them.
func offering(t *testing.T) (*Catalog, string) {
	t.Helper()
	dir := t.TempDir()
	var sums strings.Builder
	for _, prog := range []string{"a2a-runtime", "a2a-adapter"} {
		name := prog + "_" + runtime.GOOS + "_" + runtime.GOARCH
		content := []byte("#!/bin/sh\necho " + prog + "\n")
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(content)
		sums.WriteString(hex.EncodeToString(sum[:]) + "  " + name + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return New(dir), dir
}

// runScript pipes script into sh, as `curl … | sh` does.
func runScript(t *testing.T, script []byte, files string) scriptRun {
	t.Helper()
	work := t.TempDir()
	bin, calls := filepath.Join(work, "bin"), filepath.Join(work, "calls")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// curl -fsSL -o <file> <url>: the file of the URL's last segment.
	curl := "#!/bin/sh\necho \"$4\" >> '" + calls + "'\ncp '" + files + "'/\"${4##*/}\" \"$3\"\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(curl), 0o755); err != nil {
		t.Fatal(err)
	}
	r := scriptRun{installDir: filepath.Join(work, "programs")}
	cmd := exec.Command("sh")
	cmd.Stdin = bytes.NewReader(script)
	cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + work, "A2A_MESH_INSTALL_DIR=" + r.installDir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // a truncated script may end in a syntax error
	r.stdout, r.stderr = stdout.String(), stderr.String()
	if b, err := os.ReadFile(calls); err == nil {
		r.fetched = strings.Fields(string(b))
	}
	return r
}

// TestScript_ACutDownloadRunsNothing: the script is one function called on
// its last line, so `curl | sh` cut short anywhere (the middle included)
// fetches nothing, creates nothing and prints nothing, while the whole
// script installs both programs.
func TestScript_ACutDownloadRunsNothing(t *testing.T) {
	c, files := offering(t)
	script, err := c.Script("https://mesh.example.com")
	if err != nil {
		t.Fatal(err)
	}
	whole := runScript(t, script, files)
	for _, prog := range []string{"a2a-runtime", "a2a-adapter"} {
		if !strings.Contains(whole.stdout, "installed "+filepath.Join(whole.installDir, prog)) {
			t.Fatalf("the whole script did not install %s:\nstdout:\n%s\nstderr:\n%s", prog, whole.stdout, whole.stderr)
		}
	}

	cuts := []int{len(script) / 2}
	for i := range script {
		if script[i] == '\n' || i%97 == 0 {
			cuts = append(cuts, i)
		}
	}
	for _, cut := range cuts {
		if cut >= len(script)-1 {
			continue // the whole script, or all of it but its final newline
		}
		r := runScript(t, script[:cut], files)
		_, statErr := os.Stat(r.installDir)
		if len(r.fetched) > 0 || r.stdout != "" || statErr == nil {
			t.Fatalf("the script cut after %d of %d bytes ran: fetched %v, stdout %q, install folder made: %t\nthe cut script ends:\n%s",
				cut, len(script), r.fetched, r.stdout, statErr == nil, tailOf(string(script[:cut]), 300))
		}
	}
}

// TestScript_WarnsOfProgramsFetchedWithoutTLS: from an http:// URL other
// than loopback the programs and their checksums travel without TLS, where
// anyone on the way may change both; the script says so on stderr.
func TestScript_WarnsOfProgramsFetchedWithoutTLS(t *testing.T) {
	c, files := offering(t)
	for _, tc := range []struct {
		url  string
		warn bool
	}{
		{"http://mesh.example.com", true},
		{"http://mesh.example.com:3000/base", true},
		{"http://10.0.0.7:3000", true},
		{"http://127.example.com", true},
		{"https://mesh.example.com", false},
		{"https://mesh.example.com:8443/base", false},
		{"http://127.0.0.1:3000", false},
		{"http://127.0.0.1", false},
		{"http://localhost:3000", false},
		{"http://[::1]:3000", false},
	} {
		script, err := c.Script(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		r := runScript(t, script, files)
		warned := strings.Contains(r.stderr, "without TLS")
		if warned != tc.warn {
			t.Errorf("%s: warned %t, want %t; stderr:\n%s", tc.url, warned, tc.warn, r.stderr)
		}
		if strings.Contains(r.stdout, "without TLS") {
			t.Errorf("%s: the warning is on stdout", tc.url)
		}
		if !strings.Contains(r.stdout, "installed ") {
			t.Errorf("%s: nothing installed; stderr:\n%s", tc.url, r.stderr)
		}
	}
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
