package artifacts_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

const testMaxBytes = 1 << 20

// runtimeConn connects as a runtime over NATS with its own credential, as
// a2a-runtime does: the auth callout admits it and confines it to its own
// subjects.
func runtimeConn(t *testing.T, p *meshtest.Platform, rt meshtest.Attached) *meshapi.RuntimeClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: p.NATSURL(), Token: rt.RuntimeToken, InboxPrefix: rt.NATS.InboxPrefix, Name: "runtime " + rt.RuntimeID})
	if err != nil {
		t.Fatalf("runtime connection: %v", err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	return meshapi.NewClient(conn.NC).Runtime(rt.AgentID, rt.RuntimeID)
}

func write(ctx context.Context, rc *meshapi.RuntimeClient, runID string, size int64, content []byte, name string) (*mesh.Artifact, error) {
	up, err := rc.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: runID, Size: size})
	if err != nil {
		return nil, err
	}
	if _, err := up.ReadFrom(bytes.NewReader(content)); err != nil {
		up.Abandon()
		return nil, err
	}
	return up.End(0, mesh.Artifact{Filename: name})
}

func wantCode(t *testing.T, what string, err error, code mesh.Code) *mesh.Error {
	t.Helper()
	var me *mesh.Error
	if !errors.As(err, &me) || me.Code != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	return me
}

// TestUpload_ARuntimeOnNATSWritesTheArtifactsOfRunsItHolds: a runtime on its
// own NATS connection writes an artifact of the run it holds through the
// artifacts service, in chunks, and it is readable over REST; it cannot
// write for a run it does not hold, nor into another runtime's upload, and
// content over the limit is refused with the sizes said. Nothing refused
// is left in the object store.
func TestUpload_ARuntimeOnNATSWritesTheArtifactsOfRunsItHolds(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.MaxArtifactBytes = testMaxBytes
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agentA, agentB := p.CreateAgent("writer"), p.CreateAgent("other")
	rtA, rtB := p.OnlineRuntime(t, agentA.ID), p.OnlineRuntime(t, agentB.ID)
	held := p.CreateTask(agentA.ID, "held")
	p.PullRun(t, agentA.ID, rtA.RuntimeToken)
	pending := p.CreateTask(agentA.ID, "pending")
	heldByB := p.CreateTask(agentB.ID, "b's")
	p.PullRun(t, agentB.ID, rtB.RuntimeToken)
	a, b := runtimeConn(t, p, rtA), runtimeConn(t, p, rtB)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Several chunks' worth, binary.
	content := make([]byte, 600<<10)
	for i := range content {
		content[i] = byte(i * 31)
	}
	stored, err := write(ctx, a, held.ID, int64(len(content)), content, "out/data.bin")
	if err != nil {
		t.Fatalf("write over NATS: %v", err)
	}
	if stored.Size != int64(len(content)) || stored.TaskRunID != held.ID || stored.AgentID != agentA.ID || stored.Filename != "out/data.bin" {
		t.Fatalf("stored %+v", stored)
	}
	got := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + stored.ID + "/content", Owner: true}).Expect(t, http.StatusOK).Body
	if !bytes.Equal(got, content) {
		t.Fatalf("REST gives %d bytes back, not the %d written", len(got), len(content))
	}
	if run := p.GetTask(held.ID); len(run.Artifacts) != 1 || run.Artifacts[0].ArtifactID != stored.ID {
		t.Fatalf("the run lists %+v", run.Artifacts)
	}

	// Runs it does not hold: not claimed, another agent's.
	_, err = write(ctx, a, pending.ID, 1, []byte("x"), "a.txt")
	wantCode(t, "a pending run", err, mesh.CodeInvalidTransition)
	_, err = write(ctx, a, heldByB.ID, 1, []byte("x"), "a.txt")
	wantCode(t, "another agent's run", err, mesh.CodeForbidden)

	// Too large, said at the open or found on the way.
	_, err = write(ctx, a, held.ID, testMaxBytes+1, make([]byte, testMaxBytes+1), "big.bin")
	if e := wantCode(t, "a declared size over the limit", err, mesh.CodePayloadTooLarge); !strings.Contains(e.Message, "1048577 bytes") || !strings.Contains(e.Message, "1048576 bytes") {
		t.Errorf("the refusal does not say the sizes: %q", e.Message)
	}
	_, err = write(ctx, a, held.ID, 0, make([]byte, testMaxBytes+1), "big.bin")
	if e := wantCode(t, "content over the limit", err, mesh.CodePayloadTooLarge); !strings.Contains(e.Message, "limit of 1048576 bytes") {
		t.Errorf("the refusal does not say the limit: %q", e.Message)
	}

	// Runtime A cannot put content into runtime B's upload: the server
	// refuses the publish on B's subject.
	upB, err := b.OpenArtifact(ctx, meshapi.OpenArtifactRequest{TaskRunID: heldByB.ID})
	if err != nil {
		t.Fatal(err)
	}
	intruder := runtimeNC(t, p, rtA)
	wantPublishRefused(t, intruder, bus.ArtifactUploadSubject(agentB.ID, rtB.RuntimeID, upB.ID), "runtime A wrote into runtime B's upload")
	if _, err := upB.Write([]byte("b's own")); err != nil {
		t.Fatal(err)
	}
	own, err := upB.End(0, mesh.Artifact{Filename: "b.txt"})
	if err != nil {
		t.Fatalf("B's upload after A's attempt: %v", err)
	}
	if body := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + own.ID + "/content", Owner: true}).Expect(t, http.StatusOK).Body; string(body) != "b's own" {
		t.Fatalf("B's artifact holds %q", body)
	}

	// Only the two stored artifacts have content.
	wantObjects(t, ctx, p, 2, "refused artifacts")
}

// wantObjects waits until the artifact object store holds n objects: what
// was refused (the what) is dropped from it in the background.
func wantObjects(t *testing.T, ctx context.Context, p *meshtest.Platform, n int, what string) {
	t.Helper()
	store, err := p.Conn().JS.ObjectStore(ctx, bus.ObjectArtifacts)
	if err != nil {
		t.Fatal(err)
	}
	meshtest.Eventually(t, 10*time.Second, func() bool {
		objects, err := store.List(ctx)
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			objects = nil
		} else if err != nil {
			return false
		}
		return len(objects) == n
	}, func() string { return what + " left content in the object store" })
}

// wantPublishRefused checks that nc cannot write a part to an upload's
// subject: the server refuses the publish, so no instance answers.
func wantPublishRefused(t *testing.T, nc *nats.Conn, subject, what string) {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Header.Set(meshapi.HeaderArtifactOffset, "0")
	msg.Data = []byte("intruder")
	if _, err := nc.RequestMsg(msg, 2*time.Second); err == nil {
		t.Fatal(what)
	}
}

// runtimeNC is a runtime's own NATS connection, with no client on it.
func runtimeNC(t *testing.T, p *meshtest.Platform, rt meshtest.Attached) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(p.NATSURL(), nats.Token(rt.RuntimeToken), nats.CustomInboxPrefix(rt.NATS.InboxPrefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestUpload_AStoreWithNoRoomIsUnavailableNotAnInternalError: when the
// object store cannot take the content (its stream is full, or JetStream is
// electing a leader or out of storage), the writer is told the store is
// unavailable, to retry later, not given an internal error it cannot act on.
func TestUpload_AStoreWithNoRoomIsUnavailableNotAnInternalError(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.MaxArtifactBytes = testMaxBytes
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agent := p.CreateAgent("writer")
	rt := p.OnlineRuntime(t, agent.ID)
	held := p.CreateTask(agent.ID, "held")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	rc := runtimeConn(t, p, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The object store's stream has room for less than the content.
	js := p.Conn().JS
	stream, err := js.Stream(ctx, "OBJ_"+bus.ObjectArtifacts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.MaxBytes = 64 << 10
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	content := bytes.Repeat([]byte("x"), 512<<10)
	_, err = write(ctx, rc, held.ID, int64(len(content)), content, "big.txt")
	me := wantCode(t, "an artifact the store has no room for", err, mesh.CodeUnavailable)
	if strings.Contains(me.Message, "nats:") {
		t.Fatalf("the refusal names the store's insides: %q", me.Message)
	}
}
