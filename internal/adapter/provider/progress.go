package provider

import (
	"strconv"
	"strings"
)

// ProgressPrefix marks a host's stderr line as a progress report, e.g.
// "progress: 40% reading the repository".
const ProgressPrefix = "progress:"

// ParseProgressLine reads a progress report from one stderr line. The text
// after ProgressPrefix, trimmed, is the message; a leading "NN%" (0 to 100,
// decimals allowed) sets the percentage and is taken off the message. ok is
// false for any other line.
func ParseProgressLine(line string) (p Progress, ok bool) {
	rest, ok := strings.CutPrefix(line, ProgressPrefix)
	if !ok {
		return Progress{}, false
	}
	rest = strings.TrimSpace(rest)
	word, after, _ := strings.Cut(rest, " ")
	if num, isPercent := strings.CutSuffix(word, "%"); isPercent {
		if v, err := strconv.ParseFloat(num, 64); err == nil && v >= 0 && v <= 100 {
			return Progress{Message: strings.TrimSpace(after), Percent: &v}, true
		}
	}
	return Progress{Message: rest}, true
}
