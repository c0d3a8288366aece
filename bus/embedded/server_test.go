package embedded_test

import (
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/bus/embedded"
)

// A cluster node must be reachable where the other nodes' routes say it is,
// so cluster settings that cannot be are refused before a server starts.
func TestStart_RefusesClusterSettingsThatCannotForm(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  embedded.Config
		want string
	}{
		{"routes without a cluster name", embedded.Config{Routes: []string{"nats-route://127.0.0.1:6222"}}, "need ClusterName"},
		{"a route listener without a cluster name", embedded.Config{ClusterListen: "127.0.0.1:6222"}, "need ClusterName"},
		{"a cluster without a route listener", embedded.Config{ClusterName: "c"}, "cluster listen address"},
		{"a route listener on port 0", embedded.Config{ClusterName: "c", ClusterListen: "127.0.0.1:0"}, "fixed port"},
		{"a route that is not a URL", embedded.Config{ClusterName: "c", ClusterListen: "127.0.0.1:6222", Routes: []string{"127.0.0.1:6223"}}, "not a nats-route:// URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.StoreDir = t.TempDir()
			s, err := embedded.Start(tc.cfg)
			if err == nil {
				s.Shutdown()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
