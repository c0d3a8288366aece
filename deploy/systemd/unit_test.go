// Package systemd_test checks the platform's systemd unit and the
// sysusers.d entry of the user it runs as: the settings a node serving
// thousands of runtimes needs, its sandbox, and, with systemd's own tools
// where they are installed, that systemd reads both as written.
package systemd_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const (
	unitFile     = "a2a-platform.service"
	sysusersFile = "a2a-mesh.sysusers.conf"
)

// unit is a parsed unit file: section to key to every value given, in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a setting of a section: %q", path, n, line)
			}
			key = strings.TrimSpace(key)
			u[section][key] = append(u[section][key], strings.TrimSpace(value))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// last is the value that counts of a setting given once or more.
func (u unit) last(section, key string) (string, bool) {
	v := u[section][key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// TestUnit_RaisesTheFileLimitKeepsStateAndSandboxesThePlatform: the unit
// lets one node hold tens of thousands of connections, has systemd make
// the data dir it names, and runs the platform in a sandbox: no privileges,
// a read-only system, no home folders, a private /tmp, no devices, no
// kernel tunables.
func TestUnit_RaisesTheFileLimitKeepsStateAndSandboxesThePlatform(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, unitFile)
	if v, _ := u.last("Service", "LimitNOFILE"); v == "" {
		t.Error("LimitNOFILE is not set: the default soft limit of 1024 files stops a node at about a thousand runtimes")
	} else if n, err := strconv.Atoi(strings.SplitN(v, ":", 2)[0]); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%s, want at least 65536", v)
	}
	want := map[string]string{
		"NoNewPrivileges":         "true",
		"ProtectSystem":           "strict",
		"ProtectHome":             "true",
		"PrivateTmp":              "true",
		"PrivateDevices":          "true",
		"ProtectKernelTunables":   "true",
		"ProtectKernelModules":    "true",
		"ProtectKernelLogs":       "true",
		"ProtectControlGroups":    "true",
		"ProtectClock":            "true",
		"ProtectHostname":         "true",
		"RestrictNamespaces":      "true",
		"RestrictRealtime":        "true",
		"RestrictSUIDSGID":        "true",
		"LockPersonality":         "true",
		"MemoryDenyWriteExecute":  "true",
		"SystemCallArchitectures": "native",
		"CapabilityBoundingSet":   "",
		"UMask":                   "0077",
	}
	for key, value := range want {
		if got, ok := u.last("Service", key); !ok || got != value {
			t.Errorf("%s=%q (set: %t), want %q", key, got, ok, value)
		}
	}
	if got, _ := u.last("Service", "RestrictAddressFamilies"); strings.Join(strings.Fields(got), " ") != "AF_INET AF_INET6 AF_UNIX" {
		t.Errorf("RestrictAddressFamilies=%q, want the IP families and AF_UNIX only", got)
	}

	// The data dir is the state directory systemd makes and owns for the
	// user, the only path the sandbox lets it write.
	state, _ := u.last("Service", "StateDirectory")
	exec, _ := u.last("Service", "ExecStart")
	m := regexp.MustCompile(`--data-dir\s+(\S+)`).FindStringSubmatch(exec)
	if state == "" || m == nil || m[1] != "/var/lib/"+state {
		t.Errorf("StateDirectory=%q and ExecStart's --data-dir %v: want --data-dir /var/lib/<StateDirectory>", state, m)
	}
	if rw, ok := u.last("Service", "ReadWritePaths"); ok {
		t.Errorf("ReadWritePaths=%s: StateDirectory makes the data dir writable, nothing else needs to be", rw)
	}
	if !strings.HasPrefix(exec, "/usr/local/bin/a2a-platform up ") {
		t.Errorf("ExecStart=%s, want /usr/local/bin/a2a-platform up …", exec)
	}
}

// TestSysusers_CreatesTheUserTheUnitRunsAs: the sysusers.d entry makes the
// system user and group the unit names, with the data dir as its home and
// no login shell.
func TestSysusers_CreatesTheUserTheUnitRunsAs(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, unitFile)
	user, _ := u.last("Service", "User")
	group, _ := u.last("Service", "Group")
	if user == "" || group != user {
		t.Fatalf("User=%q Group=%q: want a user and its own group", user, group)
	}
	b, err := os.ReadFile(sysusersFile)
	if err != nil {
		t.Fatal(err)
	}
	var entry []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := sysusersFields(line); len(f) > 0 && f[0] == "u" {
			entry = f
		}
	}
	state, _ := u.last("Service", "StateDirectory")
	if len(entry) < 6 || entry[1] != user || entry[2] != "-" || entry[4] != "/var/lib/"+state || !strings.HasSuffix(entry[5], "nologin") {
		t.Fatalf("sysusers.d entry %q: want u %s - \"…\" /var/lib/%s …/nologin (a system user with its data dir as home)", entry, user, state)
	}
}

// sysusersFields splits a sysusers.d line into its fields, a quoted field
// whole ("" for a comment or an empty line).
func sysusersFields(line string) []string {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	return regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(line, -1)
}

// TestUnit_SystemdReadsTheUnitAndTheUserAsWritten runs systemd's own checks
// where systemd's tools are installed: systemd-analyze verify (every
// setting known and valid), the offline security review (exposure at most
// 2.0, "OK"), and systemd-sysusers on the entry.
func TestUnit_SystemdReadsTheUnitAndTheUserAsWritten(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze is not installed: only the settings were checked (%v)", err)
		return
	}
	dir := t.TempDir()
	raw, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	// verify wants the program to exist; any executable stands in for it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(raw), "ExecStart=/usr/local/bin/a2a-platform ", "ExecStart="+self+" ", 1)
	copied := filepath.Join(dir, unitFile)
	if err := os.WriteFile(copied, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", "--man=no", copied).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command(analyze, "security", "--offline=true", copied).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Errorf("exposure level %s, want at most 2.0:\n%s", m[1], out)
	}

	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Fatalf("systemd-analyze is installed but systemd-sysusers is not: %v", err)
	}
	abs, err := filepath.Abs(sysusersFile)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(sysusers, "--dry-run", "--root="+root, abs).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Creating user 'a2a-mesh'") || strings.Contains(string(out), sysusersFile+":") {
		t.Errorf("systemd-sysusers --dry-run %s: %v\n%s", sysusersFile, err, out)
	}
}
