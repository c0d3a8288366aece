package artifacts_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// writeKeyed writes an artifact with a write key, as a runtime retrying a
// write does; stored reports whether the open named one already stored.
func writeKeyed(ctx context.Context, rc *meshapi.RuntimeClient, runID, key string, content []byte, name string) (a *mesh.Artifact, stored bool, err error) {
	up, err := rc.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: runID, Size: int64(len(content)), WriteKey: key})
	if err != nil {
		return nil, false, err
	}
	if up.Stored != nil {
		return up.Stored, true, nil
	}
	if _, err := up.ReadFrom(bytes.NewReader(content)); err != nil {
		up.Abandon()
		return nil, false, err
	}
	a, err = up.End(0, mesh.Artifact{Filename: name})
	return a, false, err
}

// TestUpload_AWriteSentAgainWithItsKeyIsStoredOnce: a write sent again
// with the key of one the run already has (its answer was lost) is
// answered with the stored artifact, and the run keeps one; the key is
// the run's own (another run's write with it is its own), a write with
// the key that never ended does not count, and a key out of bounds is
// refused.
func TestUpload_AWriteSentAgainWithItsKeyIsStoredOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.MaxArtifactBytes = testMaxBytes
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agent := p.CreateAgent("writer")
	rt := p.OnlineRuntime(t, agent.ID)
	first := p.CreateTask(agent.ID, "first")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	second := p.CreateTask(agent.ID, "second")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	rc := runtimeConn(t, p, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a, stored, err := writeKeyed(ctx, rc, first.ID, "rep_A.0", []byte("report"), "report.md")
	if err != nil || stored {
		t.Fatalf("first write: %+v stored=%v, %v", a, stored, err)
	}
	again, stored, err := writeKeyed(ctx, rc, first.ID, "rep_A.0", []byte("report"), "report.md")
	if err != nil || !stored || again.ID != a.ID || again.Filename != "report.md" || again.Size != 6 {
		t.Fatalf("the same write again: %+v stored=%v, %v; want artifact %s as stored", again, stored, err, a.ID)
	}
	other, stored, err := writeKeyed(ctx, rc, second.ID, "rep_A.0", []byte("report"), "report.md")
	if err != nil || stored || other.ID == a.ID {
		t.Fatalf("the key on another run: %+v stored=%v, %v; want an artifact of its own", other, stored, err)
	}

	// A write with the key that was given up is no write.
	up, err := rc.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: first.ID, WriteKey: "rep_A.1"})
	if err != nil {
		t.Fatal(err)
	}
	up.Abandon()
	b, stored, err := writeKeyed(ctx, rc, first.ID, "rep_A.1", []byte("data"), "data.txt")
	if err != nil || stored {
		t.Fatalf("a write after one given up: %+v stored=%v, %v", b, stored, err)
	}

	run := p.GetTask(first.ID)
	var ids []string
	for _, ref := range run.Artifacts {
		ids = append(ids, ref.ArtifactID)
	}
	if len(ids) != 2 || ids[0] != a.ID || ids[1] != b.ID {
		t.Fatalf("the run lists %v, want [%s %s]", ids, a.ID, b.ID)
	}

	for _, key := range []string{strings.Repeat("k", meshapi.MaxWriteKeyBytes+1), "a key", "k/1"} {
		_, _, err := writeKeyed(ctx, rc, first.ID, key, []byte("x"), "x.txt")
		wantCode(t, "write key "+key, err, mesh.CodeInvalidRequest)
	}
}
