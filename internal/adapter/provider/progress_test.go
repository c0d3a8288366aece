package provider

import "testing"

func TestParseProgressLine(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	tests := []struct {
		line    string
		ok      bool
		message string
		percent *float64
	}{
		{"progress: reading files", true, "reading files", nil},
		{"progress:40% reading", true, "reading", pct(40)},
		{"progress:  12.5%  ", true, "", pct(12.5)},
		{"progress: 100% done", true, "done", pct(100)},
		{"progress: 140% too much", true, "140% too much", nil},
		{"progress: NaN% odd", true, "NaN% odd", nil},
		{"progress: -5% odd", true, "-5% odd", nil},
		{"progress:", true, "", nil},
		{"Progress: capitalised", false, "", nil},
		{"  progress: indented", false, "", nil},
		{"warning: something", false, "", nil},
	}
	for _, tt := range tests {
		p, ok := ParseProgressLine(tt.line)
		if ok != tt.ok || p.Message != tt.message || (p.Percent == nil) != (tt.percent == nil) ||
			(p.Percent != nil && *p.Percent != *tt.percent) {
			t.Errorf("ParseProgressLine(%q) = %q %v %v, want %q %v %v", tt.line, p.Message, p.Percent, ok, tt.message, tt.percent, tt.ok)
		}
	}
}
