package artifacts_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// pattern is content no two parts of which are alike, so a part read from
// the wrong place shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// readPart asks the read operation for one part, as a client does.
func readPart(ctx context.Context, p *meshtest.Platform, req meshapi.ReadArtifactRequest) (*meshapi.ArtifactPart, error) {
	var part meshapi.ArtifactPart
	err := bus.Call(ctx, p.Conn().NC, bus.ServiceSubject(bus.ServiceArtifacts, meshapi.OpArtifactRead), req, &part)
	return &part, err
}

// TestRead_AnArtifactIsReadInBoundedPartsAndRoundTripsIntact: the content
// of a large artifact comes back over the bus byte for byte, in parts of at
// most ArtifactPartBytes, each naming where the next starts; a read may
// start anywhere in the content, with or without a cursor, and an empty
// artifact reads as empty.
func TestRead_AnArtifactIsReadInBoundedPartsAndRoundTripsIntact(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.MaxArtifactBytes = 8 << 20
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agent := p.CreateAgent("writer")
	rt, run := p.HeldRun(t, agent.ID, "write")
	rc := runtimeConn(t, p, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	content := pattern(5<<20 + 12345)
	stored, err := write(ctx, rc, run.ID, int64(len(content)), content, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	client := meshapi.NewClient(p.Conn().NC)

	r, err := client.ReadArtifact(ctx, meshapi.ReadArtifactRequest{ArtifactID: stored.ID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Size != int64(len(content)) || !bytes.Equal(got, content) {
		t.Fatalf("read %d bytes (size %d), want the %d written", len(got), r.Size, len(content))
	}

	// Part by part: each bounded, each starting where the last ended.
	var parts int
	var joined []byte
	req := meshapi.ReadArtifactRequest{ArtifactID: stored.ID}
	for {
		part, err := readPart(ctx, p, req)
		if err != nil {
			t.Fatalf("part at %d: %v", req.Offset, err)
		}
		parts++
		if len(part.Data) > meshapi.ArtifactPartBytes || part.Offset != req.Offset || part.Size != int64(len(content)) {
			t.Fatalf("part %d: %d bytes at %d of %d", parts, len(part.Data), part.Offset, part.Size)
		}
		joined = append(joined, part.Data...)
		if part.Next == "" {
			break
		}
		if len(part.Data) != meshapi.ArtifactPartBytes {
			t.Fatalf("part %d carries %d bytes before the end, want full parts", parts, len(part.Data))
		}
		req.Offset, req.Cursor = part.Offset+int64(len(part.Data)), part.Next
	}
	if want := (len(content) + meshapi.ArtifactPartBytes - 1) / meshapi.ArtifactPartBytes; parts != want || !bytes.Equal(joined, content) {
		t.Fatalf("%d parts holding %d bytes, want %d parts holding the content", parts, len(joined), want)
	}

	// From anywhere: no cursor (found from the start), a cursor of an
	// earlier place, the very end.
	for _, c := range []struct {
		name   string
		offset int64
		cursor string
	}{
		{"mid-chunk, no cursor", 1_000_003, ""},
		{"a cursor from before", 3_000_001, firstCursor(t, ctx, p, stored.ID)},
		{"a cursor from after", 100, lastCursor(t, ctx, p, stored.ID)},
		{"a cursor that is not one", 777, "nonsense"},
		{"the end", int64(len(content)), ""},
	} {
		r, err := client.ReadArtifact(ctx, meshapi.ReadArtifactRequest{ArtifactID: stored.ID, Offset: c.offset, Cursor: c.cursor})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, content[c.offset:]) {
			t.Errorf("%s: %d bytes from %d (%v), want the %d after it", c.name, len(got), c.offset, err, len(content)-int(c.offset))
		}
	}
	for _, off := range []int64{-1, int64(len(content)) + 1} {
		_, err := readPart(ctx, p, meshapi.ReadArtifactRequest{ArtifactID: stored.ID, Offset: off})
		wantCode(t, "an offset outside the content", err, mesh.CodeInvalidRequest)
	}

	empty, err := write(ctx, rc, run.ID, 0, nil, "empty.txt")
	if err != nil {
		t.Fatal(err)
	}
	part, err := readPart(ctx, p, meshapi.ReadArtifactRequest{ArtifactID: empty.ID})
	if err != nil || len(part.Data) != 0 || part.Size != 0 || part.Next != "" {
		t.Fatalf("an empty artifact reads as %+v (%v)", part, err)
	}
}

// firstCursor is the cursor after an artifact's first part.
func firstCursor(t *testing.T, ctx context.Context, p *meshtest.Platform, id string) string {
	t.Helper()
	part, err := readPart(ctx, p, meshapi.ReadArtifactRequest{ArtifactID: id})
	if err != nil || part.Next == "" {
		t.Fatalf("first part: %+v %v", part, err)
	}
	return part.Next
}

// lastCursor is the cursor of an artifact's last part.
func lastCursor(t *testing.T, ctx context.Context, p *meshtest.Platform, id string) string {
	t.Helper()
	first, err := readPart(ctx, p, meshapi.ReadArtifactRequest{ArtifactID: id})
	if err != nil {
		t.Fatal(err)
	}
	part, err := readPart(ctx, p, meshapi.ReadArtifactRequest{ArtifactID: id, Offset: first.Size - meshapi.ArtifactPartBytes - 10})
	if err != nil || part.Next == "" {
		t.Fatalf("the part before the last: %+v %v", part, err)
	}
	return part.Next
}

// TestRead_RefusesWhatTheReaderMayNotRead: a missing artifact, or one whose
// content is gone, is NOT_FOUND; a reader that names an agent is refused
// another agent's artifact as the runtime's download route refuses it
// (FORBIDDEN), and one that names a run gets only that run's artifacts (the
// others are NOT_FOUND, as the delegation service says). A runtime cannot
// ask at all: the operation is on a service subject.
func TestRead_RefusesWhatTheReaderMayNotRead(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agentA, agentB := p.CreateAgent("a"), p.CreateAgent("b")
	rtA, run := p.HeldRun(t, agentA.ID, "write")
	other := p.CreateTask(agentA.ID, "other")
	rc := runtimeConn(t, p, rtA)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stored, err := write(ctx, rc, run.ID, 0, []byte("a's output"), "out.txt")
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		req  meshapi.ReadArtifactRequest
		code mesh.Code
	}{
		{"an unknown artifact", meshapi.ReadArtifactRequest{ArtifactID: mesh.NewID()}, mesh.CodeNotFound},
		{"not an id", meshapi.ReadArtifactRequest{ArtifactID: "../" + stored.ID}, mesh.CodeNotFound},
		{"another agent's", meshapi.ReadArtifactRequest{ArtifactID: stored.ID, AgentID: agentB.ID}, mesh.CodeForbidden},
		{"another run's", meshapi.ReadArtifactRequest{ArtifactID: stored.ID, TaskRunID: other.ID}, mesh.CodeNotFound},
	} {
		_, err := readPart(ctx, p, c.req)
		wantCode(t, c.name, err, c.code)
	}
	for _, req := range []meshapi.ReadArtifactRequest{
		{ArtifactID: stored.ID, AgentID: agentA.ID},
		{ArtifactID: stored.ID, TaskRunID: run.ID},
	} {
		if part, err := readPart(ctx, p, req); err != nil || string(part.Data) != "a's output" {
			t.Errorf("%+v: %q %v", req, part.Data, err)
		}
	}

	// The runtime's connection cannot reach the operation.
	rtNC := runtimeNC(t, p, rtA)
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if err := bus.Call(short, rtNC, bus.ServiceSubject(bus.ServiceArtifacts, meshapi.OpArtifactRead), meshapi.ReadArtifactRequest{ArtifactID: stored.ID}, nil); err == nil {
		t.Fatal("a runtime read an artifact on the service subject")
	}

	// Metadata whose content is gone.
	store, err := p.Conn().JS.ObjectStore(ctx, bus.ObjectArtifacts)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, stored.ID); err != nil {
		t.Fatal(err)
	}
	_, err = readPart(ctx, p, meshapi.ReadArtifactRequest{ArtifactID: stored.ID})
	wantCode(t, "an artifact without content", err, mesh.CodeNotFound)
}
