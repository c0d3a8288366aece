package bench_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/bench"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestScale_TwoThousandRuntimesOnOneNodeEachGetTheirWork: 2,000 agents, each
// with its runtime connected over NATS (through the auth callout) to one
// `a2a-platform up` process with the shipped defaults, are each given one
// task at once, and every runtime claims and completes its own agent's
// task. The shipped server once capped a stream at 1,000 consumers: the
// 997th agent's runtime was refused at hello and its work stayed pending.
func TestScale_TwoThousandRuntimesOnOneNodeEachGetTheirWork(t *testing.T) {
	const n = 2000
	platformBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, bench.Config{Only: "scale", ScaleRuntimes: n, BinDir: filepath.Dir(platformBin)})
	if err != nil {
		t.Fatal(err)
	}
	if sc := r.Scale; sc == nil || sc.Runtimes != n || sc.Dispatch.Count != n {
		t.Fatalf("not every runtime got its work:\n%s", r.Markdown())
	}
	t.Logf("%d connections refused and tried again\n%s", r.Scale.ConnectRetries, r.Markdown())
}
