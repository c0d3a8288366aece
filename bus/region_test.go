package bus

import (
	"strings"
	"testing"
)

// TestResolveRegion: on a cluster the region is the cluster's name, and a
// configured region must be that name; on a server in no cluster it is the
// configured region, or DefaultRegion; a name that cannot be a region is
// refused, saying what to do.
func TestResolveRegion(t *testing.T) {
	cases := []struct {
		configured, cluster, want, err string
	}{
		{"", "east", "east", ""},
		{"east", "east", "east", ""},
		{"west", "east", "", "belongs to cluster \"east\""},
		{"", "", DefaultRegion, ""},
		{"west", "", "west", ""},
		{"West", "", "", "lowercase"},
		{"", "A2A_MESH", "", "rename the cluster"},
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
