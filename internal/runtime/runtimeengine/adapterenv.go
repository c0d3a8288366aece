package runtimeengine

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/a2amesh/a2amesh/internal/cpuprofile"
)

// An adapter environment file gives the adapter the runtime supervises
// what a host reads from its environment (OPENCLAW_GATEWAY_TOKEN,
// ANTHROPIC_API_KEY, a proxy setting): a runtime run as a service does not
// have the user's shell environment. One KEY=VALUE per line, "#" comments,
// an optional "export " and quotes around the value; read at each start of
// the adapter, so an edit takes effect at its next start.

var envKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// runtimeOnlyEnv are the runtime's own secrets, under their names and their
// former names: never handed to the adapter.
var runtimeOnlyEnv = map[string]bool{
	"A2A_MESH_PAIRING_CODE": true, "A2A_PAIRING_CODE": true,
	"A2A_MESH_RUNTIME_TOKEN": true, "A2A_RUNTIME_TOKEN": true,
	// Not a secret, but the runtime's own profile file, which the adapter
	// would write over.
	cpuprofile.EnvVar: true,
}

// ReadAdapterEnvFile reads an adapter environment file. A missing file
// gives nothing; a file other users may read, a malformed line, or one of
// the runtime's own variables is an error that names the line but never a
// value.
func ReadAdapterEnvFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adapter environment file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("adapter environment file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("adapter environment file %s may be read by other users (mode %v): it holds credentials; chmod 600 %s", path, info.Mode().Perm(), path)
	}
	var env []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !envKeyPattern.MatchString(key) {
			return nil, fmt.Errorf("adapter environment file %s, line %d: want KEY=VALUE", path, n)
		}
		if runtimeOnlyEnv[key] {
			return nil, fmt.Errorf("adapter environment file %s, line %d: %s is the runtime's own and is never given to the adapter", path, n, key)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		env = append(env, key+"="+value)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("adapter environment file %s: %w", path, err)
	}
	return env, nil
}
