package provider

import (
	"regexp"
	"strings"
)

// ansiEscape matches terminal escape sequences: CSI (colours, cursor
// moves), OSC (titles, links) and two-character escapes. Hosts colour
// their error messages even when stderr is not a terminal.
var ansiEscape = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// stripANSI removes terminal escape sequences from s.
func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	return ansiEscape.ReplaceAllString(s, "")
}

// tempEnv points a host's temporary files at dir: TMPDIR for Unix
// programs and Node.js, TMP and TEMP for the rest.
func tempEnv(dir string) []string {
	return []string{"TMPDIR=" + dir, "TMP=" + dir, "TEMP=" + dir}
}
