package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/spf13/cobra"
)

// client returns an API client for the platform of the admin context in
// effect (target), authenticated with the owner credential, found in
// $A2A_MESH_OWNER_TOKEN, else the context's file (--owner-token-file, the
// context's, <data-dir>/owner.token).
func (g *globals) client() (*restclient.Client, error) {
	base, ownerFile, err := g.target()
	if err != nil {
		return nil, err
	}
	token := readSecretEnv(envOwnerToken)
	if token == "" {
		path := ownerFile
		if path == "" {
			path = platform.OwnerTokenPath(g.dataDir)
		}
		t, err := platform.ReadOwnerToken(path)
		if err != nil {
			return nil, &noCredentialError{fmt.Errorf("owner credential: %w (start the platform with `a2a-platform up`, or pass --data-dir / --owner-token-file, or choose a context: a2a-platform context list)", err)}
		}
		token = t
	}
	return restclient.New(base, restclient.WithOwnerToken(token), restclient.WithUserAgent("a2a-platform"))
}

// envOwnerToken carries the owner credential itself, so that it never
// shows in a process listing; no flag does.
const envOwnerToken = cliusage.EnvPrefix + "OWNER_TOKEN"

// sendOp is the RunE of a command that sends op, its request made from
// the command's arguments by req, and prints the answer as send does.
func (g *globals) sendOp(op *meshapi.OpInfo, req func(args []string) any) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error { return g.send(cmd, op, req(args)) }
}

// send calls op's REST route with req (restclient.Client.Call) and prints
// the answer; a route that answers with no body prints "done".
func (g *globals) send(cmd *cobra.Command, op *meshapi.OpInfo, req any) error {
	return g.exchange(cmd, op, func(ctx context.Context, c *restclient.Client, out any) error {
		return c.Call(ctx, op, req, out)
	})
}

// route is send for a route whose body is not op's request (a person's
// decision, say): at names the path values, body is sent as it is.
func (g *globals) route(cmd *cobra.Command, op *meshapi.OpInfo, at, body any) error {
	return g.exchange(cmd, op, func(ctx context.Context, c *restclient.Client, out any) error {
		_, err := c.Route(ctx, op, at, body, out)
		return err
	})
}

func (g *globals) exchange(cmd *cobra.Command, op *meshapi.OpInfo, call func(context.Context, *restclient.Client, any) error) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), restclient.DefaultTimeout)
	defer cancel()
	var out json.RawMessage
	if err := call(ctx, c, &out); err != nil {
		return err
	}
	if op.REST.Status == http.StatusNoContent {
		cmd.Println("done")
		return nil
	}
	return g.print(out)
}

func newAgents(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "Create, list and delete agent accounts"}
	var name, description, instructions, instructionsFile, homeRegion string
	var allowDuplicate bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an agent account",
		Long: "Create an agent account. A name another agent already has is refused (exit 1), since people and the web page\n" +
			"tell agents apart by name: to reconnect an agent, issue a new pairing code for it instead; --allow-duplicate-name creates it anyway.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !allowDuplicate {
				if err := g.nameFree(cmd.Context(), name); err != nil {
					return err
				}
			}
			if instructionsFile != "" {
				b, err := os.ReadFile(instructionsFile)
				if err != nil {
					return err
				}
				instructions = string(b)
			}
			return g.send(cmd, meshapi.OpAgentsCreate.OpInfo, meshapi.CreateAgentRequest{
				Name: name, Description: description, Instructions: instructions, HomeRegion: homeRegion,
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "agent name (required)")
	create.Flags().StringVar(&description, "description", "", "what the agent does")
	create.Flags().StringVar(&instructions, "instructions", "", "business instructions handed to the agent host")
	create.Flags().StringVar(&instructionsFile, "instruction-file", "", "read the instructions from a file")
	create.Flags().StringVar(&homeRegion, "home-region", "", "the region that serves the agent (default: the region of the platform that creates it)")
	create.Flags().BoolVar(&allowDuplicate, "allow-duplicate-name", false, "create the agent even when another agent has that name")
	cliusage.Deprecated(create.Flags(), "instructions-file", "instruction-file")
	_ = create.MarkFlagRequired("name")
	list := &cobra.Command{
		Use: "list", Short: "List agent accounts", Args: cobra.NoArgs,
		RunE: g.sendOp(meshapi.OpAgentsList.OpInfo, func([]string) any { return meshapi.ListAgentsRequest{} }),
	}
	runtimes := &cobra.Command{
		Use: "runtimes <agent_id>", Short: "List an agent's runtimes and whether they are online", Args: cobra.ExactArgs(1),
		Annotations: listing,
		RunE:        g.sendOp(meshapi.OpRegistryListRuntimes.OpInfo, func(args []string) any { return meshapi.ListRuntimesRequest{AgentID: args[0]} }),
	}
	del := &cobra.Command{
		Use:   "delete <agent_id>",
		Short: "Delete an agent: its runtimes are revoked, its open runs canceled; its history stays",
		Args:  cobra.ExactArgs(1),
		RunE:  g.sendOp(meshapi.OpAgentsDelete.OpInfo, func(args []string) any { return meshapi.DeleteAgentRequest{AgentID: args[0]} }),
	}
	cmd.AddCommand(create, list, runtimes, del, newAgentBudget(g))
	cmd.AddCommand(newAgentPolicy(g))
	return cmd
}

// nameFree refuses a name another agent has (letter case aside). The
// platform does not require names to differ (agents are their ids); the
// command line asks for it, as a second agent of the same name is mostly a
// mistake: someone creating a new agent to reconnect one.
func (g *globals) nameFree(ctx context.Context, name string) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, restclient.DefaultTimeout)
	defer cancel()
	list, err := meshapi.Send(ctx, c, meshapi.OpAgentsList, meshapi.ListAgentsRequest{})
	if err != nil {
		return err
	}
	for _, a := range list.Agents {
		if strings.EqualFold(strings.TrimSpace(a.Name), strings.TrimSpace(name)) {
			return fmt.Errorf("an agent named %q already exists (%s): to connect a machine to it again, issue a new pairing code for it (a2a-platform pairing-code %s); "+
				"otherwise choose another name, or pass --allow-duplicate-name to create a second agent of that name", a.Name, a.ID, a.ID)
		}
	}
	return nil
}

// pairingProviders are the adapter providers a2a-runtime pair --adapter
// takes, as the pairing hints list them.
const pairingProviders = "claude, codex, gemini, cursor, hermes, openclaw, command, or echo to try"

func newPairingCode(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pairing-code <agent_id>",
		Short: "Issue a one-time pairing code for an agent",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), restclient.DefaultTimeout)
			defer cancel()
			// The route takes an optional lifetime as its body; the
			// platform's default is kept.
			var code meshapi.PairingCode
			if _, err := c.Route(ctx, meshapi.OpPairingIssueCode.OpInfo, meshapi.IssuePairingCodeRequest{AgentID: args[0]}, nil, &code); err != nil {
				return err
			}
			if err := g.print(struct {
				PairingToken string    `json:"pairing_token"`
				ExpiresAt    time.Time `json:"expires_at"`
			}{code.PairingToken, code.ExpiresAt}); err != nil {
				return err
			}
			// The code goes in on standard input (echo is the shell's own,
			// never a process), and the adapter is named, or the agent comes
			// online but never ready.
			fmt.Fprintf(os.Stderr, "\nOn the machine that runs the agent (before %s), with <provider> its agent host's (%s):\n  echo %s | a2a-runtime pair --api-base %s --adapter <provider>\n  a2a-runtime start\n",
				code.ExpiresAt.Local().Format(time.Kitchen), pairingProviders, code.PairingToken, c.Base())
			return nil
		},
	}
}

func newTasks(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "tasks", Short: "Create, inspect, answer and cancel task runs"}
	var agent, text, conversation, idemKey string
	var timeout time.Duration
	var wait bool
	create := &cobra.Command{
		Use: "create", Short: "Create a task run for an agent", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			input, err := json.Marshal(map[string]string{"text": text})
			if err != nil {
				return err
			}
			req := meshapi.CreateTaskRunRequest{
				TargetAgentID: agent, Input: input, ConversationID: conversation,
				IdempotencyKey: idemKey, TimeoutSeconds: int64(timeout.Seconds()),
			}
			return g.postRun(cmd.Context(), meshapi.OpTaskRunsCreate.OpInfo, req, req, wait)
		},
	}
	create.Flags().StringVar(&agent, "agent", "", "target agent id (required)")
	create.Flags().StringVar(&text, "text", "", "the task text")
	create.Flags().StringVar(&conversation, "conversation", "", "continue this conversation")
	create.Flags().StringVar(&idemKey, "idempotency-key", "", "repeat-safe key: the same key returns the same run")
	create.Flags().DurationVar(&timeout, "timeout", 0, "deadline for the whole run")
	create.Flags().BoolVar(&wait, "wait", false, waitUsage)
	_ = create.MarkFlagRequired("agent")
	get := &cobra.Command{
		Use: "get <task_run_id>", Short: "Show a task run", Args: cobra.ExactArgs(1),
		RunE: g.sendOp(meshapi.OpTaskRunsGet.OpInfo, func(args []string) any { return meshapi.GetTaskRunRequest{TaskRunID: args[0]} }),
	}
	var status, cursor string
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List task runs, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.send(cmd, meshapi.OpTaskRunsList.OpInfo, meshapi.ListTaskRunsRequest{
				AgentID: agent, ConversationID: conversation, Status: mesh.Status(status), Cursor: cursor, Limit: limit,
			})
		},
	}
	list.Flags().StringVar(&agent, "agent", "", "only this agent's runs")
	list.Flags().StringVar(&conversation, "conversation", "", "only this conversation's runs")
	list.Flags().StringVar(&status, "status", "", "only runs in this status: "+strings.Join(statusNames(), ", "))
	cliusage.CompleteValues(list, "status", statusNames()...)
	list.Flags().StringVar(&cursor, "cursor", "", "continue after this cursor (next_cursor of the previous page)")
	list.Flags().IntVar(&limit, "limit", 0, "page size (default 50)")
	var reason string
	cancel := &cobra.Command{
		Use: "cancel <task_run_id>", Short: "Cancel a task run", Args: cobra.ExactArgs(1),
		RunE: g.sendOp(meshapi.OpTaskRunsCancel.OpInfo, func(args []string) any { return meshapi.CancelTaskRunRequest{TaskRunID: args[0], Reason: reason} }),
	}
	cancel.Flags().StringVar(&reason, "reason", "", "why (recorded on the run)")
	cmd.AddCommand(create, get, list, cancel, newTaskReply(g))
	cmd.AddCommand(newTaskDecision(g, "allow"), newTaskDecision(g, "deny"))
	return cmd
}

// newTaskReply answers a run waiting for input (POST /task-runs/{id}/input).
func newTaskReply(g *globals) *cobra.Command {
	var text string
	var wait bool
	reply := &cobra.Command{
		Use: "reply <task_run_id>", Short: "Answer a task run that is waiting for input (input-required)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.postRun(cmd.Context(), meshapi.OpTaskRunsContinue.OpInfo, meshapi.ContinueTaskRunRequest{TaskRunID: args[0]}, meshapi.InputAnswer{Text: &text}, wait)
		},
	}
	reply.Flags().StringVar(&text, "text", "", "the answer (required)")
	reply.Flags().BoolVar(&wait, "wait", false, waitUsage)
	_ = reply.MarkFlagRequired("text")
	return reply
}

// postRun sends body to op's route (create, reply), at naming its path
// values, and prints the run it answers with, once the run ended or asks
// for input when wait is set.
func (g *globals) postRun(ctx context.Context, op *meshapi.OpInfo, at, body any, wait bool) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	var run mesh.TaskRun
	sent, cancel := context.WithTimeout(ctx, restclient.DefaultTimeout)
	defer cancel()
	if _, err := c.Route(sent, op, at, body, &run); err != nil {
		return err
	}
	if !wait {
		return g.print(run)
	}
	done, err := waitRun(ctx, c, run.ID)
	if err != nil {
		return err
	}
	if err := g.print(*done); err != nil {
		return err
	}
	return waitOutcome(*done)
}

// runOutcome is a waited-for run that did not complete: the program says
// why on standard error and exits with code.
type runOutcome struct {
	msg  string
	code int
}

func (e *runOutcome) Error() string { return e.msg }
func (e *runOutcome) ExitCode() int { return e.code }

// waitOutcome is nil for a completed run and a runOutcome otherwise, so a
// script can tell a failed run from a completed one by the exit code alone.
func waitOutcome(run mesh.TaskRun) error {
	why := ""
	if run.Error != nil {
		why = ": " + run.Error.Code
		if run.Error.Message != "" {
			why += ": " + run.Error.Message
		}
	}
	switch run.Status {
	case mesh.StatusCompleted:
		return nil
	case mesh.StatusFailed:
		return &runOutcome{msg: fmt.Sprintf("task run %s failed%s", run.ID, why), code: exitRunFailed}
	case mesh.StatusCanceled:
		return &runOutcome{msg: fmt.Sprintf("task run %s was canceled%s", run.ID, why), code: exitRunCanceled}
	case mesh.StatusInputRequired:
		return &runOutcome{msg: fmt.Sprintf("task run %s waits for input: answer it with a2a-platform tasks reply %s --text <answer>", run.ID, run.ID), code: exitRunInputRequired}
	}
	return fmt.Errorf("task run %s stopped being waited for in status %s", run.ID, run.Status)
}

// waitRun follows the run's events until it ends.
func waitRun(ctx context.Context, c *restclient.Client, id string) (*mesh.TaskRun, error) {
	for {
		// A fresh value each time: decoding leaves fields the answer omits untouched.
		var run mesh.TaskRun
		if err := c.Call(ctx, meshapi.OpTaskRunsGet.OpInfo, meshapi.GetTaskRunRequest{TaskRunID: id}, &run); err != nil {
			return nil, err
		}
		if run.Status.Terminal() || run.Status == mesh.StatusInputRequired {
			return &run, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// statusNames are the statuses of task runs, in lifecycle order.
func statusNames() []string {
	var names []string
	for _, s := range mesh.AllStatuses() {
		names = append(names, string(s))
	}
	return names
}

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// newTaskDecision allows ("approve") or denies ("deny") the step a run in
// approval-required waits for (POST /task-runs/{id}/approval).
func newTaskDecision(g *globals, decision string) *cobra.Command {
	use, short := "approve <task_run_id>", "Allow the step a task run waits for (approval-required)"
	if decision == "deny" {
		use, short = "deny <task_run_id>", "Deny the step a task run waits for (approval-required)"
	}
	var reason string
	c := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.route(cmd, meshapi.OpTaskRunsDecideApproval.OpInfo, meshapi.DecideApprovalRequest{TaskRunID: args[0]},
				meshapi.ApprovalDecision{Decision: decision, Reason: reason})
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why (recorded on the run and told to the host)")
	return c
}
