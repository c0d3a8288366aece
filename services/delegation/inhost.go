package delegation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Delegation from inside a run: the runtime that holds a run asks, on its
// own subjects, to hand another agent a task for it. The platform checks
// everything the runtime cannot be trusted with: that it holds the run now,
// that the agent's delegation policy allows the target, and the chain's
// loop and depth limits. The task then goes through the target's A2A endpoint
// exactly as a routing rule's does (a token the platform signs for the
// delegating agent, the run as parent), and is canceled when the turn of
// the run that asked for it ends.

// Limits of what a runtime may send and fetch over the bus (a message is
// at most a few MiB; files travel base64-encoded).
const (
	maxDelegateText     = 1 << 20
	maxDelegateFiles    = 16
	maxDelegateFileSize = 2 << 20
	maxDelegateWait     = 20 * time.Second
	maxArtifactFetch    = 2 << 20
)

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// heldRun returns the run the runtime named, if it is running on that
// runtime now: a runtime acts only for runs it holds.
func (s *Service) heldRun(ctx context.Context, runID string) (*mesh.TaskRun, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	if !mesh.ValidID(runID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "task_run_id is required")
	}
	run, err := s.client.GetTaskRun(ctx, runID)
	if errors.Is(err, mesh.ErrNotFound) || (err == nil && run.TargetAgentID != agentID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %s not found", runID)
	}
	if err != nil {
		return nil, err
	}
	if run.Status != mesh.StatusRunning || run.RuntimeID != runtimeID {
		return nil, mesh.Errorf(mesh.CodeConflict, "task run %s is not running on this runtime: only a run the runtime holds may delegate", runID)
	}
	return run, nil
}

// delegatedChild returns a task the held run delegated.
func (s *Service) delegatedChild(ctx context.Context, parent *mesh.TaskRun, childID string) (*mesh.TaskRun, error) {
	if mesh.ValidID(childID) {
		child, err := s.client.GetTaskRun(ctx, childID)
		if err == nil && child.ParentTaskRunID == parent.ID {
			return child, nil
		}
		if err != nil && !errors.Is(err, mesh.ErrNotFound) {
			return nil, err
		}
	}
	return nil, mesh.Errorf(mesh.CodeNotFound, "task %q was not delegated by task run %s", childID, parent.ID)
}

// heldChild returns the held run the runtime named and a task that run
// delegated: what every operation on a delegated task checks first.
func (s *Service) heldChild(ctx context.Context, runID, childID string) (parent, child *mesh.TaskRun, err error) {
	if parent, err = s.heldRun(ctx, runID); err != nil {
		return nil, nil, err
	}
	if child, err = s.delegatedChild(ctx, parent, childID); err != nil {
		return nil, nil, err
	}
	return parent, child, nil
}

func (s *Service) handleDelegateAgents(ctx context.Context, in *meshapi.DelegateAgentsRequest) (*meshapi.DelegateAgentList, error) {
	run, err := s.heldRun(ctx, in.TaskRunID)
	if err != nil {
		return nil, err
	}
	self, err := s.agent(ctx, run.TargetAgentID)
	if err != nil {
		return nil, err
	}
	out := meshapi.DelegateAgentList{Agents: []meshapi.DelegateAgent{}}
	if self.Delegation == nil {
		return &out, nil
	}
	all, err := s.client.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	for i := range all.Agents {
		a := &all.Agents[i]
		if a.ID == self.ID || !self.Delegation.Allows(a) {
			continue
		}
		out.Agents = append(out.Agents, meshapi.DelegateAgent{AgentID: a.ID, Name: a.Name, Description: a.Description, Skills: a.Skills})
	}
	// Each agent's presence is kept by its home region's registry: asked
	// of several at once, and no more, however many agents a runtime's
	// request lists.
	var wg sync.WaitGroup
	slots := make(chan struct{}, onlineAsks)
	for i := range out.Agents {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			out.Agents[i].Online, _ = s.client.AgentOnline(ctx, out.Agents[i].AgentID)
		})
	}
	wg.Wait()
	return &out, nil
}

// onlineAsks bounds the registries asked at once whether a listed agent is
// online.
const onlineAsks = 16

func (s *Service) handleDelegateSend(ctx context.Context, in *meshapi.DelegateSendRequest) (*meshapi.DelegateSendResponse, error) {
	parent, err := s.heldRun(ctx, in.TaskRunID)
	if err != nil {
		return nil, err
	}
	if err := checkSend(*in); err != nil {
		return nil, err
	}
	if prev, err := s.sentBefore(ctx, parent.ID, in.RequestID); err != nil || prev != nil {
		if prev != nil {
			return &meshapi.DelegateSendResponse{TaskRunID: prev.ChildID, AgentID: prev.AgentID}, nil
		}
		return nil, err
	}
	if err := s.allowed(ctx, parent.TargetAgentID, in.AgentID); err != nil {
		return nil, err
	}
	if err := s.checkChainTo(ctx, parent, in.AgentID); err != nil {
		var re *mesh.RunError
		if errors.As(err, &re) {
			return nil, &mesh.Error{Code: mesh.Code(re.Code), Message: re.Message}
		}
		return nil, err
	}
	parts := []*a2a.Part{a2a.NewTextPart(in.Text)}
	for _, f := range in.Files {
		p := a2a.NewRawPart(f.Content)
		p.Filename, p.MediaType = f.Name, f.MimeType
		parts = append(parts, p)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	msg.ID = fmt.Sprintf("delegation.%s.%s", parent.ID, in.RequestID)
	childID, err := s.sendMessage(ctx, parent, in.AgentID, msg)
	if err != nil {
		return nil, err
	}
	if err := s.linkChild(ctx, parent, childID, in.AgentID, in.RequestID); err != nil {
		return nil, err
	}
	return &meshapi.DelegateSendResponse{TaskRunID: childID, AgentID: in.AgentID}, nil
}

func checkSend(in meshapi.DelegateSendRequest) error {
	switch {
	case !requestIDPattern.MatchString(in.RequestID):
		return mesh.Errorf(mesh.CodeInvalidRequest, "request_id must be 1-64 letters, digits, - or _")
	case in.Text == "":
		return mesh.Errorf(mesh.CodeInvalidRequest, "text is required")
	case len(in.Text) > maxDelegateText:
		return mesh.Errorf(mesh.CodePayloadTooLarge, "text is longer than %d bytes", maxDelegateText)
	case len(in.Files) > maxDelegateFiles:
		return mesh.Errorf(mesh.CodeInvalidRequest, "more than %d files", maxDelegateFiles)
	}
	total := 0
	for _, f := range in.Files {
		if f.Name == "" {
			return mesh.Errorf(mesh.CodeInvalidRequest, "every file needs a name")
		}
		total += len(f.Content)
	}
	if total > maxDelegateFileSize {
		return mesh.Errorf(mesh.CodePayloadTooLarge, "files hold %d bytes, over the limit of %d", total, maxDelegateFileSize)
	}
	return nil
}

// allowed checks the delegating agent's policy: the platform's decision,
// whatever the runtime asks.
func (s *Service) allowed(ctx context.Context, from, to string) error {
	self, err := s.agent(ctx, from)
	if err != nil {
		return err
	}
	if to == from {
		return mesh.Errorf(mesh.CodeDelegationNotAllowed, "agent %s may not delegate to itself", s.describeAgent(ctx, from))
	}
	target, err := s.agent(ctx, to)
	if errors.Is(err, mesh.ErrNotFound) {
		return mesh.Errorf(mesh.CodeNotFound, "agent %q not found", to)
	}
	if err != nil {
		return err
	}
	if !self.Delegation.Allows(target) {
		return mesh.Errorf(mesh.CodeDelegationNotAllowed,
			"agent %s may not delegate to %s: its delegation policy does not allow it (the owner allows agents in the agent's \"delegation\" setting)",
			s.describeAgent(ctx, from), s.describeAgent(ctx, to))
	}
	return nil
}

func (s *Service) handleDelegateGet(ctx context.Context, in *meshapi.DelegateGetRequest) (*meshapi.DelegatedTask, error) {
	_, child, err := s.heldChild(ctx, in.TaskRunID, in.ChildID)
	if err != nil {
		return nil, err
	}
	if in.Wait > 0 {
		if child, err = s.runs.Await(ctx, s.client, child, min(in.Wait, maxDelegateWait)); err != nil {
			return nil, err
		}
	}
	return new(delegatedTask(child)), nil
}

func delegatedTask(run *mesh.TaskRun) meshapi.DelegatedTask {
	return meshapi.DelegatedTask{
		TaskRunID: run.ID, AgentID: run.TargetAgentID, Status: run.Status, Progress: run.Progress,
		Output: run.Output, Error: run.Error, Artifacts: run.Artifacts,
	}
}

func (s *Service) handleDelegateArtifact(ctx context.Context, in *meshapi.DelegateArtifactRequest) (*meshapi.DelegateArtifactResponse, error) {
	_, child, err := s.heldChild(ctx, in.TaskRunID, in.ChildID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(child.Artifacts, func(a mesh.ArtifactRef) bool { return a.ArtifactID == in.ArtifactID })
	if i < 0 {
		return nil, mesh.Errorf(mesh.CodeNotFound, "artifact %q is not one of task %s's", in.ArtifactID, child.ID)
	}
	ref := child.Artifacts[i]
	if err := checkFetchSize(ref.Filename, ref.Size); err != nil {
		return nil, err
	}
	content, err := s.client.ReadArtifact(ctx, meshapi.ReadArtifactRequest{ArtifactID: ref.ArtifactID, TaskRunID: child.ID})
	if err != nil {
		return nil, fmt.Errorf("read artifact %s: %w", ref.ArtifactID, err)
	}
	// The run's reference is checked first, to refuse before any read;
	// the content's own size is what is read.
	if err := checkFetchSize(ref.Filename, content.Size); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(content, maxArtifactFetch))
	if err != nil {
		return nil, fmt.Errorf("read artifact %s: %w", ref.ArtifactID, err)
	}
	return &meshapi.DelegateArtifactResponse{Filename: ref.Filename, MimeType: ref.MimeType, Content: b}, nil
}

// checkFetchSize refuses an artifact over what a delegating run may fetch.
func checkFetchSize(filename string, size int64) error {
	if size > maxArtifactFetch {
		return mesh.Errorf(mesh.CodePayloadTooLarge, "artifact %s is %d bytes, over the %d a delegating run may fetch", filename, size, maxArtifactFetch)
	}
	return nil
}

func (s *Service) handleDelegateCancel(ctx context.Context, in *meshapi.DelegateCancelRequest) (*meshapi.DelegatedTask, error) {
	parent, child, err := s.heldChild(ctx, in.TaskRunID, in.ChildID)
	if err != nil {
		return nil, err
	}
	if !child.Status.Terminal() {
		s.cancelChild(ctx, parent, child)
		if child, err = s.client.GetTaskRun(ctx, child.ID); err != nil {
			return nil, err
		}
	}
	return new(delegatedTask(child)), nil
}
