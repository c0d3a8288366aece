package artifacts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

func writeInput(ctx context.Context, c *meshapi.Client, req meshapi.OpenInputRequest, content []byte, attempt int, meta mesh.Artifact) (*mesh.Artifact, error) {
	up, err := c.OpenInputArtifact(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, err := up.ReadFrom(bytes.NewReader(content)); err != nil {
		up.Abandon()
		return nil, err
	}
	return up.End(attempt, meta)
}

// TestInput_APlatformServiceWritesAnInputFileInChunks: a file given with a
// conversation's input is written through the artifacts service in chunks,
// as a runtime writes a run's artifact: the service measures and hashes it
// and stores it as an input file of the conversation, which reads back
// intact. Content over the limit, an unknown conversation and an attempt
// are refused and leave nothing stored; a runtime can neither open an input
// file nor write into one.
func TestInput_APlatformServiceWritesAnInputFileInChunks(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.MaxArtifactBytes = testMaxBytes
		c.Lease = 5 * time.Minute
		c.HeartbeatTimeout = 5 * time.Minute
	})
	agent := p.CreateAgent("reader")
	rt := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := meshapi.NewClient(p.Conn().NC)
	conv, err := client.CreateConversation(ctx, meshapi.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	open := meshapi.OpenInputRequest{AgentID: agent.ID, ConversationID: conv.ID}

	content := pattern(testMaxBytes - 3)
	stored, err := writeInput(ctx, client, open, content, 0, mesh.Artifact{Filename: "table.csv", MimeType: "text/csv"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	if stored.Role != mesh.ArtifactRoleInput || stored.TaskRunID != "" || stored.AgentID != agent.ID || stored.ConversationID != conv.ID ||
		stored.Size != int64(len(content)) || stored.SHA256 != hex.EncodeToString(sum[:]) || stored.Filename != "table.csv" || stored.MimeType != "text/csv" {
		t.Fatalf("stored %+v", stored)
	}
	if got, err := client.GetArtifact(ctx, stored.ID); err != nil || got.Role != mesh.ArtifactRoleInput || got.ConversationID != conv.ID {
		t.Fatalf("the stored metadata: %+v %v", got, err)
	}
	r, err := client.ReadArtifact(ctx, meshapi.ReadArtifactRequest{ArtifactID: stored.ID, AgentID: agent.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(content))
	}

	for _, c := range []struct {
		name    string
		open    meshapi.OpenInputRequest
		content []byte
		attempt int
		code    mesh.Code
	}{
		{"a declared size over the limit", meshapi.OpenInputRequest{AgentID: agent.ID, ConversationID: conv.ID, Size: testMaxBytes + 1}, []byte("x"), 0, mesh.CodePayloadTooLarge},
		{"content over the limit", open, make([]byte, testMaxBytes+1), 0, mesh.CodePayloadTooLarge},
		{"an unknown conversation", meshapi.OpenInputRequest{AgentID: agent.ID, ConversationID: mesh.NewID()}, []byte("x"), 0, mesh.CodeNotFound},
		{"no agent", meshapi.OpenInputRequest{ConversationID: conv.ID}, []byte("x"), 0, mesh.CodeInvalidRequest},
		{"an attempt", open, []byte("x"), 1, mesh.CodeInvalidRequest},
	} {
		_, err := writeInput(ctx, client, c.open, c.content, c.attempt, mesh.Artifact{Filename: "a.txt"})
		wantCode(t, c.name, err, c.code)
	}

	// A runtime reaches neither the open nor an input file's upload.
	up, err := client.OpenInputArtifact(ctx, open)
	if err != nil {
		t.Fatal(err)
	}
	rtNC := runtimeNC(t, p, rt)
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if err := bus.Call(short, rtNC, bus.ServiceSubject(bus.ServiceArtifacts, meshapi.OpArtifactOpenInput), open, nil); err == nil {
		t.Fatal("a runtime opened an input file")
	}
	wantPublishRefused(t, rtNC, bus.ArtifactInputSubject(up.ID), "a runtime wrote into an input file")
	if _, err := up.Write([]byte("the service's own")); err != nil {
		t.Fatal(err)
	}
	own, err := up.End(0, mesh.Artifact{Filename: "own.txt"})
	if err != nil {
		t.Fatalf("the upload after the runtime's attempt: %v", err)
	}
	if own.Size != int64(len("the service's own")) || own.MimeType != "text/plain; charset=utf-8" {
		t.Fatalf("stored %+v", own)
	}

	// Only the two stored files have content.
	wantObjects(t, ctx, p, 2, "refused input files")
}
