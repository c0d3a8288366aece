package serviceunit

import (
	"fmt"
	"path/filepath"
	"strings"
)

// shortLen is how much of each id a service name keeps: enough to tell a
// user's few runtimes apart at a glance. Install refuses to overwrite a file
// generated for another profile, so a shared prefix cannot hijack a service.
const shortLen = 8

// UnitName is the systemd unit of a profile,
// a2a-runtime-<agent8>-<runtime8>.service.
func UnitName(profile string) (string, error) {
	agent, runtime, err := shortIDs(profile)
	if err != nil {
		return "", err
	}
	return "a2a-runtime-" + agent + "-" + runtime + ".service", nil
}

// Label is the launchd label of a profile,
// dev.a2amesh.runtime.<agent8>-<runtime8>.
func Label(profile string) (string, error) {
	agent, runtime, err := shortIDs(profile)
	if err != nil {
		return "", err
	}
	return "dev.a2amesh.runtime." + agent + "-" + runtime, nil
}

// UnitPath is where systemd looks for the user's own units.
func UnitPath(home, profile string) (string, error) {
	name, err := UnitName(profile)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "systemd", "user", name), nil
}

// PlistPath is where launchd loads the user's agents from at login.
func PlistPath(home, profile string) (string, error) {
	label, err := Label(profile)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "Library", "LaunchAgents", label+".plist"), nil
}

// shortIDs splits "{agent_id}/{runtime_id}" and reduces each id to at most
// shortLen lower-case letters and digits, characters every unit-name and
// label syntax accepts.
func shortIDs(profile string) (agent, runtime string, err error) {
	a, r, _ := strings.Cut(profile, "/")
	agent, runtime = sanitize(a), sanitize(r)
	if strings.Count(profile, "/") != 1 || agent == "" || runtime == "" {
		return "", "", fmt.Errorf("%w: profile name %q is not {agent_id}/{runtime_id} with letters or digits in each", ErrInvalidSpec, profile)
	}
	return agent, runtime, nil
}

func sanitize(id string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(id) {
		if b.Len() == shortLen {
			break
		}
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			b.WriteRune(c)
		}
	}
	return b.String()
}
