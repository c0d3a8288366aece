package bus

import (
	"strings"
	"testing"
)

// TestResolveRegion: the configured region wins, then the NATS cluster's
// name, then DefaultRegion; a name that cannot be a region is refused,
// saying how to set one.
func TestResolveRegion(t *testing.T) {
	cases := []struct {
		configured, cluster, want, err string
	}{
		{"west", "east", "west", ""},
		{"", "east", "east", ""},
		{"", "", DefaultRegion, ""},
		{"West", "", "", "lowercase"},
		{"", "A2A_MESH", "", "--region"},
		{"west", "A2A_MESH", "west", ""},
	}
	for _, c := range cases {
		got, err := ResolveRegion(c.configured, c.cluster)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ResolveRegion(%q, %q) = %q, %v; want an error saying %q", c.configured, c.cluster, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ResolveRegion(%q, %q) = %q, %v; want %q", c.configured, c.cluster, got, err, c.want)
		}
	}
}
