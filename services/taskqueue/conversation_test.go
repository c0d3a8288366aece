package taskqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestConversation_ARunStartedWithoutOneKeepsItInItsOwnRecord: a run
// created without a conversation starts one under its own id, held by the
// run record alone (no conversation record is written for it); the
// conversation reads as any other, and a second run in it shares its
// workspace. A conversation created on its own still has a record.
func TestConversation_ARunStartedWithoutOneKeepsItInItsOwnRecord(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("talker")
	client := meshapi.NewClient(p.Conn().NC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	first := p.CreateTask(agent.ID, "hello")
	if first.ConversationID != first.ID || first.WorkspaceID == "" {
		t.Fatalf("run %s has conversation %q and workspace %q; want its own id and a workspace", first.ID, first.ConversationID, first.WorkspaceID)
	}
	if n := p.KeyCount(t, bus.BucketConversations); n != 0 {
		t.Fatalf("%d conversation records after a run started its own conversation, want 0", n)
	}
	conv, err := client.GetConversation(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if conv.ID != first.ID || conv.WorkspaceID != first.WorkspaceID || !conv.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("conversation %+v; want id %s, workspace %s, created %v", conv, first.ID, first.WorkspaceID, first.CreatedAt)
	}
	secondResp, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, ConversationID: first.ID, Input: []byte(`{"text":"again"}`)})
	if err != nil {
		t.Fatal(err)
	}
	second := secondResp.TaskRun
	if second.ConversationID != first.ID || second.WorkspaceID != first.WorkspaceID {
		t.Fatalf("second run in conversation %s, workspace %s; want %s, %s", second.ConversationID, second.WorkspaceID, first.ID, first.WorkspaceID)
	}
	// A run's id names its conversation only when it started one.
	var me *mesh.Error
	if _, err := client.GetConversation(ctx, second.ID); !errors.As(err, &me) || me.Code != mesh.CodeNotFound {
		t.Fatalf("conversation named by a run that joined another: %v, want NOT_FOUND", err)
	}

	own, err := client.CreateConversation(ctx, meshapi.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.KeyCount(t, bus.BucketConversations); n != 1 {
		t.Fatalf("%d conversation records after creating one, want 1", n)
	}
	if got, err := client.GetConversation(ctx, own.ID); err != nil || got.WorkspaceID != own.WorkspaceID {
		t.Fatalf("created conversation reads %+v, %v", got, err)
	}
}
