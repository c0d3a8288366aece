package embedded_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/mesh"
)

var maxPayloadLine = regexp.MustCompile(`(?m)^\s*max_payload\s*[:=].*$`)

// TestMaxPayload_ServersAllowTheLargestBusMessage: the largest message the
// platform sends (a run record with a maximal input and output) fits in
// mesh.MaxBusPayload, and every server the platform ships allows exactly
// that: the embedded one and the nats-server configurations of deploy/nats.
func TestMaxPayload_ServersAllowTheLargestBusMessage(t *testing.T) {
	// A run record: its input, an output as large, and room for the rest.
	if need := 2*mesh.MaxInputBytes + 256<<10; need > mesh.MaxBusPayload {
		t.Fatalf("a run record may be %d bytes; MaxBusPayload is %d", need, mesh.MaxBusPayload)
	}
	for _, name := range []string{"single.conf", "cluster.conf", "region.conf", "region-single.conf"} {
		// The files take addresses from the environment; the line is
		// read alone and parsed as nats-server parses it.
		text, err := os.ReadFile(filepath.Join("..", "..", "deploy", "nats", name))
		if err != nil {
			t.Fatal(err)
		}
		line := maxPayloadLine.Find(text)
		if line == nil {
			t.Errorf("%s sets no max_payload (the server's default is 1 MB)", name)
			continue
		}
		m, err := conf.Parse(string(line))
		if err != nil {
			t.Fatalf("%s: %s: %v", name, line, err)
		}
		v := m["max_payload"]
		if got, ok := v.(int64); !ok || got != mesh.MaxBusPayload {
			t.Errorf("%s: max_payload %v, want %d (mesh.MaxBusPayload)", name, v, mesh.MaxBusPayload)
		}
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != mesh.MaxBusPayload {
		t.Errorf("the embedded server allows %d bytes, want %d (mesh.MaxBusPayload)", got, mesh.MaxBusPayload)
	}
}
