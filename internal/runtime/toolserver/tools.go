package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// maxFileBytes bounds the files sent with one task (the platform's limit).
const maxFileBytes = 2 << 20

// platformWait is how long one platform call waits for a task to settle.
const platformWait = 20 * time.Second

// ListAgentsOutput lists the agents this agent may delegate to.
type ListAgentsOutput struct {
	Agents []meshapi.DelegateAgent `json:"agents"`
}

// SendTaskInput is a task for another agent.
type SendTaskInput struct {
	AgentID string   `json:"agent_id" jsonschema:"the id of the agent to send the task to (from list_agents)"`
	Text    string   `json:"text" jsonschema:"what the agent should do"`
	Files   []string `json:"files,omitempty" jsonschema:"paths of files in your working folder to send with the task"`
	Wait    bool     `json:"wait,omitempty" jsonschema:"wait for the agent's answer instead of returning the task id at once"`
}

// TaskInput names a delegated task.
type TaskInput struct {
	TaskID string `json:"task_id" jsonschema:"the task id send_task returned"`
	Wait   bool   `json:"wait,omitempty" jsonschema:"wait until the task ends (or asks for input)"`
}

// TaskOutput is a delegated task as the host sees it.
type TaskOutput struct {
	TaskID   string   `json:"task_id"`
	AgentID  string   `json:"agent_id"`
	Status   string   `json:"status"`
	Progress string   `json:"progress,omitempty"`
	Text     string   `json:"text,omitempty"`
	Error    string   `json:"error,omitempty"`
	Files    []string `json:"files,omitempty"`
}

func (rt *runTools) newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "a2a-mesh", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_agents", Description: "List the agents of the mesh you may hand tasks to: their id, name, description, skills and whether they are online."}, rt.listAgents)
	mcp.AddTool(s, &mcp.Tool{Name: "send_task", Description: "Send another agent of the mesh a task (text, and optionally files from your working folder). With wait, returns the agent's answer; otherwise the task id for get_task."}, rt.sendTask)
	mcp.AddTool(s, &mcp.Tool{Name: "get_task", Description: "Get a delegated task's status, progress and answer; its files are saved into your working folder."}, rt.getTask)
	mcp.AddTool(s, &mcp.Tool{Name: "cancel_task", Description: "Cancel a delegated task."}, rt.cancelTask)
	mcp.AddTool(s, &mcp.Tool{Name: ApproveTool, Description: "Ask whether a step (a tool call) may be taken: the agent's approval policy on the platform decides, or a person does. For the host's permission prompt, not for the model."}, rt.approve)
	return s
}

func (rt *runTools) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, rt.cfg.CallTimeout)
}

func (rt *runTools) listAgents(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListAgentsOutput, error) {
	cctx, cancel := rt.call(ctx)
	defer cancel()
	l, err := rt.p.DelegateAgents(cctx, meshapi.DelegateAgentsRequest{TaskRunID: rt.runID})
	if err != nil {
		return nil, ListAgentsOutput{}, explain(err)
	}
	return nil, ListAgentsOutput{Agents: l.Agents}, nil
}

func (rt *runTools) sendTask(ctx context.Context, req *mcp.CallToolRequest, in SendTaskInput) (*mcp.CallToolResult, TaskOutput, error) {
	folder := folderOf(req)
	files, err := readFiles(folder, in.Files)
	if err != nil {
		return nil, TaskOutput{}, err
	}
	cctx, cancel := rt.call(ctx)
	sent, err := rt.p.DelegateSend(cctx, meshapi.DelegateSendRequest{
		TaskRunID: rt.runID, AgentID: in.AgentID, Text: in.Text, Files: files, RequestID: requestID(),
	})
	cancel()
	if err != nil {
		return nil, TaskOutput{}, explain(err)
	}
	if !in.Wait {
		return nil, TaskOutput{TaskID: sent.TaskRunID, AgentID: sent.AgentID, Status: "submitted"}, nil
	}
	return rt.result(ctx, folder, sent.TaskRunID, true)
}

func (rt *runTools) getTask(ctx context.Context, req *mcp.CallToolRequest, in TaskInput) (*mcp.CallToolResult, TaskOutput, error) {
	return rt.result(ctx, folderOf(req), in.TaskID, in.Wait)
}

func (rt *runTools) cancelTask(ctx context.Context, _ *mcp.CallToolRequest, in TaskInput) (*mcp.CallToolResult, TaskOutput, error) {
	cctx, cancel := rt.call(ctx)
	defer cancel()
	t, err := rt.p.DelegateCancel(cctx, meshapi.DelegateCancelRequest{TaskRunID: rt.runID, ChildID: in.TaskID})
	if err != nil {
		return nil, TaskOutput{}, explain(err)
	}
	return nil, view(t), nil
}

// result reads a delegated task (waiting for it to settle when asked) and
// saves its files into the folder once it completed.
func (rt *runTools) result(ctx context.Context, folder, taskID string, wait bool) (*mcp.CallToolResult, TaskOutput, error) {
	deadline := time.Now().Add(rt.cfg.WaitLimit)
	for {
		var w time.Duration
		if wait {
			w = platformWait
		}
		cctx, cancel := context.WithTimeout(ctx, rt.cfg.CallTimeout+w)
		t, err := rt.p.DelegateGet(cctx, meshapi.DelegateGetRequest{TaskRunID: rt.runID, ChildID: taskID, Wait: w})
		cancel()
		if err != nil {
			return nil, TaskOutput{}, explain(err)
		}
		if !wait || t.Status.Settled() || time.Now().After(deadline) || ctx.Err() != nil {
			out := view(t)
			if t.Status == mesh.StatusCompleted && folder != "" {
				if out.Files, err = rt.saveArtifacts(ctx, folder, t); err != nil {
					return nil, out, err
				}
			}
			return nil, out, nil
		}
	}
}

func (rt *runTools) saveArtifacts(ctx context.Context, folder string, t *meshapi.DelegatedTask) ([]string, error) {
	var saved []string
	dir := filepath.Join(folder, "delegated", t.TaskRunID)
	for _, a := range t.Artifacts {
		cctx, cancel := rt.call(ctx)
		content, err := rt.p.DelegateArtifact(cctx, meshapi.DelegateArtifactRequest{TaskRunID: rt.runID, ChildID: t.TaskRunID, ArtifactID: a.ArtifactID})
		cancel()
		if err != nil {
			return saved, explain(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return saved, err
		}
		name := filepath.Join(dir, filepath.Base(filepath.Clean("/"+content.Filename)))
		if err := os.WriteFile(name, content.Content, 0o644); err != nil {
			return saved, err
		}
		rel, _ := filepath.Rel(folder, name)
		saved = append(saved, rel)
	}
	return saved, nil
}

func view(t *meshapi.DelegatedTask) TaskOutput {
	out := TaskOutput{TaskID: t.TaskRunID, AgentID: t.AgentID, Status: string(t.Status)}
	if t.Progress != nil {
		out.Progress = t.Progress.Message
	}
	var o struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(t.Output, &o) == nil {
		out.Text = o.Text
	}
	if t.Error != nil {
		out.Error = t.Error.Message
	}
	return out
}

// folderOf is the run's folder the adapter named, or "".
func folderOf(req *mcp.CallToolRequest) string {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ""
	}
	f := req.Extra.Header.Get(FolderHeader)
	if !filepath.IsAbs(f) {
		return ""
	}
	return filepath.Clean(f)
}

// readFiles reads the files named, each inside the run's folder.
func readFiles(folder string, paths []string) ([]meshapi.DelegateFile, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if folder == "" {
		return nil, errors.New("files cannot be sent: the host's tool configuration names no working folder")
	}
	var out []meshapi.DelegateFile
	total := 0
	for _, p := range paths {
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(folder, p)
		}
		full = filepath.Clean(full)
		if rel, err := filepath.Rel(folder, full); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("file %q is outside the working folder", p)
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("file %q: %w", p, err)
		}
		if total += len(b); total > maxFileBytes {
			return nil, fmt.Errorf("the files are larger than %d bytes in all", maxFileBytes)
		}
		out = append(out, meshapi.DelegateFile{Name: filepath.Base(full), MimeType: mime.TypeByExtension(filepath.Ext(full)), Content: b})
	}
	return out, nil
}

// explain turns a platform refusal into the tool error the model reads.
func explain(err error) error {
	var e *mesh.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %s", e.Code, e.Message)
	}
	return err
}

func requestID() string {
	return strings.ReplaceAll(mesh.NewID(), "-", "")
}
