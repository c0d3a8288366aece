package platform_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/rs/zerolog"
)

// TestUp_SecondPlatformOnADataDirInUseIsRefused: a second `up` on a data dir
// a running platform holds is refused at once, saying why, and touches
// nothing; once the first stops, the dir is free again.
func TestUp_SecondPlatformOnADataDirInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := platform.Config{
		DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
		ShutdownGrace: time.Second, Logger: zerolog.Nop(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := platform.Up(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			first.Stop()
		}
	})
	began := time.Now()
	second, err := platform.Up(ctx, cfg)
	if err == nil {
		second.Stop()
		t.Fatal("a second platform started on a data dir in use")
	}
	if !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("refusal does not say the data dir is in use: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("refusal took %s, want at once", took)
	}
	first.Stop()
	stopped = true
	again, err := platform.Up(ctx, cfg)
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	again.Stop()
}
