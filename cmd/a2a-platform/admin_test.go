package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// admin runs a2a-platform admin verbs against a platform process.
type admin struct {
	t   *testing.T
	p   *meshtest.Process
	env []string
}

func startAdmin(t *testing.T) *admin {
	t.Helper()
	data := t.TempDir()
	p := meshtest.StartProcess(t, bins.Platform, meshtest.ProcessOptions{DataDir: data})
	return &admin{t: t, p: p, env: []string{"A2A_MESH_DATA_DIR=" + data, "A2A_MESH_API_BASE=" + p.APIBase}}
}

func (a *admin) run(args ...string) result {
	a.t.Helper()
	return run(a.t, a.env, bins.Platform, args...)
}

// onTerminal runs the verb with its standard output on a pseudo-terminal
// (util-linux script), as a person at a terminal does.
func (a *admin) onTerminal(args ...string) result {
	a.t.Helper()
	line := bins.Platform
	for _, arg := range args {
		line += " '" + arg + "'"
	}
	return run(a.t, a.env, "script", "-qec", line, "/dev/null")
}

// TestCLI_UnknownCommandsAndWrongFlagsAreErrorsThatSayWhatToDo: a mistyped
// subcommand exits non-zero naming the closest one and the help to read;
// a group without a subcommand shows its help; a wrong flag or output
// format exits non-zero pointing to --help.
func TestCLI_UnknownCommandsAndWrongFlagsAreErrorsThatSayWhatToDo(t *testing.T) {
	t.Parallel()
	r := run(t, nil, bins.Platform, "agents", "lst")
	if r.code == 0 || !strings.Contains(r.stderr, `unknown command "lst" for "a2a-platform agents"`) || !strings.Contains(r.stderr, "list") ||
		!strings.Contains(r.stderr, "a2a-platform agents --help") || r.stdout != "" {
		t.Errorf("agents lst: %s", r)
	}
	if r := run(t, nil, bins.Platform, "tasks", "lsit"); r.code == 0 || !strings.Contains(r.stderr, "did you mean list") {
		t.Errorf("tasks lsit: %s", r)
	}
	if r := run(t, nil, bins.Platform, "agents"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands") || !strings.Contains(r.stdout, "delete") {
		t.Errorf("agents: %s", r)
	}
	if r := run(t, nil, bins.Platform, "agents", "create", "--nme", "x"); r.code == 0 || !strings.Contains(r.stderr, "unknown flag: --nme") || !strings.Contains(r.stderr, "a2a-platform agents create --help") {
		t.Errorf("agents create --nme: %s", r)
	}
	if r := run(t, nil, bins.Platform, "agents", "delete"); r.code == 0 || !strings.Contains(r.stderr, "accepts 1 arg(s), received 0") || !strings.Contains(r.stderr, "a2a-platform agents delete --help") {
		t.Errorf("agents delete without an id: %s", r)
	}
	if r := run(t, nil, bins.Platform, "tasks", "list", "-o", "yaml"); r.code == 0 || !strings.Contains(r.stderr, "table, json, jsonl") {
		t.Errorf("tasks list -o yaml: %s", r)
	}
}

// TestCLI_TablesOnATerminalJSONForScripts: on a terminal the verbs print
// tables; piped, the API's JSON; -o table, json and jsonl choose; consumer
// subjects print as they are (mesh.evt.<id>.>, not \u003e); events tail
// -o jsonl prints one event per line.
func TestCLI_TablesOnATerminalJSONForScripts(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	r := a.run("agents", "create", "--name", "tabled", "--home-region", "west")
	var agent struct {
		ID         string `json:"agent_id"`
		Name       string `json:"name"`
		HomeRegion string `json:"home_region"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &agent) != nil || agent.Name != "tabled" || agent.HomeRegion != "west" {
		t.Fatalf("agents create, piped: %s", r)
	}

	var list struct {
		Agents []struct {
			ID string `json:"agent_id"`
		} `json:"agents"`
	}
	if r := a.run("agents", "list"); json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Agents) != 1 || list.Agents[0].ID != agent.ID {
		t.Errorf("agents list, piped: %s", r)
	}
	table := func(r result, what string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "AGENT_ID") || !strings.Contains(lines[0], "HOME_REGION") ||
			!strings.Contains(lines[1], agent.ID) || !strings.Contains(lines[1], "tabled") || !strings.Contains(lines[1], "west") {
			t.Errorf("%s: %s", what, r)
		}
	}
	table(a.run("agents", "list", "-o", "table"), "agents list -o table")
	table(a.onTerminal("agents", "list"), "agents list on a terminal")
	if r := a.onTerminal("agents", "list", "-o", "json"); !strings.Contains(r.stdout, `"agents": [`) {
		t.Errorf("agents list -o json on a terminal: %s", r)
	}
	r = a.run("agents", "list", "-o", "jsonl")
	var one map[string]any
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &one) != nil || one["agent_id"] != agent.ID {
		t.Errorf("agents list -o jsonl: %s", r)
	}

	r = a.run("consumers", "create", "--name", "reader", "--agent", agent.ID)
	var con struct {
		Subjects []string `json:"subjects"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &con) != nil {
		t.Fatalf("consumers create: exit %d", r.code)
	}
	want := "mesh.evt." + agent.ID + ".>"
	if strings.Contains(r.stdout, `\u003e`) || !strings.Contains(r.stdout, `"`+want+`"`) {
		t.Errorf("consumers create prints the subjects %v, want %s written as it is", con.Subjects, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tail := exec.CommandContext(ctx, bins.Platform, "events", "tail", "-o", "jsonl", "--agent", agent.ID, "--since", "1h")
	tail.Env = append(tail.Environ(), a.env...)
	out, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tail.Process.Kill(); _ = tail.Wait() }()
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("events tail printed nothing")
	}
	var ev struct {
		Type    string `json:"type"`
		Subject string `json:"subject"`
	}
	if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Type != "dev.a2amesh.agent.created" || ev.Subject != agent.ID {
		t.Errorf("events tail -o jsonl first line: %s", sc.Text())
	}
}

// TestCLI_AgentsDelete: `agents delete <id>` deletes the agent and says
// what it did; the agent is gone from the list; deleting it again fails
// with the platform's not found.
func TestCLI_AgentsDelete(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	agent := a.p.CreateAgent("leaving")
	keep := a.p.CreateAgent("staying")
	a.p.CreateTask(agent.ID, "never run")
	r := a.run("agents", "delete", agent.ID)
	var res struct {
		AgentID  string `json:"agent_id"`
		Canceled int    `json:"canceled_task_runs"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.AgentID != agent.ID || res.Canceled != 1 {
		t.Fatalf("agents delete: %s", r)
	}
	if r := a.run("agents", "list", "-o", "jsonl"); strings.Contains(r.stdout, agent.ID) || !strings.Contains(r.stdout, keep.ID) {
		t.Errorf("after the delete, agents list: %s", r)
	}
	if r := a.run("agents", "delete", agent.ID); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("agents delete again: %s", r)
	}
}

// TestCLI_TasksListFiltersAndPages: `tasks list` sends the table's
// filters and page: --conversation keeps one conversation's runs, --limit
// pages them with the cursor the answer gives.
func TestCLI_TasksListFiltersAndPages(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	agent := a.p.CreateAgent("listed")
	first := a.p.CreateTask(agent.ID, "first")
	created := a.run("tasks", "create", "--agent", agent.ID, "--text", "second", "--conversation", first.ConversationID)
	var second mesh.TaskRun
	if created.code != 0 || json.Unmarshal([]byte(created.stdout), &second) != nil || second.ConversationID != first.ConversationID {
		t.Fatalf("tasks create --conversation: %s", created)
	}
	other := a.p.CreateTask(agent.ID, "another conversation")

	list := func(args ...string) (ids []string, cursor string) {
		t.Helper()
		r := a.run(append([]string{"tasks", "list", "-o", "json"}, args...)...)
		var l struct {
			TaskRuns []struct {
				ID string `json:"task_run_id"`
			} `json:"task_runs"`
			NextCursor string `json:"next_cursor"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &l) != nil {
			t.Fatalf("tasks list %v: %s", args, r)
		}
		for _, run := range l.TaskRuns {
			ids = append(ids, run.ID)
		}
		return ids, l.NextCursor
	}
	if ids, _ := list("--conversation", first.ConversationID); strings.Join(ids, " ") != second.ID+" "+first.ID {
		t.Errorf("tasks list --conversation: %v, want the conversation's runs newest first: %s %s (not %s)", ids, second.ID, first.ID, other.ID)
	}
	ids, cursor := list("--agent", agent.ID, "--limit", "2")
	if strings.Join(ids, " ") != other.ID+" "+second.ID || cursor == "" {
		t.Fatalf("tasks list --limit 2: %v (cursor %q), want %s %s and a cursor", ids, cursor, other.ID, second.ID)
	}
	if ids, _ := list("--agent", agent.ID, "--limit", "2", "--cursor", cursor); strings.Join(ids, " ") != first.ID {
		t.Errorf("tasks list --cursor: %v, want %s", ids, first.ID)
	}
	if r := a.run("tasks", "list", "--status", "sleeping"); r.code == 0 || !strings.Contains(r.stderr, "sleeping") {
		t.Errorf("tasks list --status sleeping: %s", r)
	}
}

// TestCLI_TasksReplyAnswersARunWaitingForInput: `tasks reply` gives a run in
// input-required its answer; the same run goes back to its agent.
func TestCLI_TasksReplyAnswersARunWaitingForInput(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	agent := a.p.CreateAgent("asker")
	rt := a.p.OnlineRuntime(t, agent.ID)
	run := a.p.CreateTask(agent.ID, "book a table")
	if r := a.run("tasks", "reply", run.ID, "--text", "four"); r.code == 0 || !strings.Contains(r.stderr, "not waiting for input") {
		t.Fatalf("reply to a pending run: %s", r)
	}
	a.p.PullRun(t, agent.ID, rt.RuntimeToken)
	a.p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "For how many?"}, "input_required": true}).Expect(t, http.StatusOK)
	r := a.run("tasks", "reply", run.ID, "--text", "four", "-o", "json")
	var got mesh.TaskRun
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.ID != run.ID || got.Status != mesh.StatusPending || got.InputText() != "four" {
		t.Fatalf("tasks reply: %s", r)
	}
	if again := a.p.PullRun(t, agent.ID, rt.RuntimeToken); again.ID != run.ID || again.InputText() != "four" {
		t.Fatalf("the runtime claimed %s with input %s", again.ID, again.Input)
	}
}

// TestCLI_UsageShowsWhatAnAgentsRunsSpent: `usage` prints an agent's days
// as a table, as JSON and as one line per day; a day that is no day is
// refused with the platform's reason (exit 1).
func TestCLI_UsageShowsWhatAnAgentsRunsSpent(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	agent := a.p.CreateAgent("spender")
	rt := a.p.OnlineRuntime(t, agent.ID)
	for _, in := range []int{1200, 800} {
		run := a.p.CreateTask(agent.ID, "work")
		a.p.PullRun(t, agent.ID, rt.RuntimeToken)
		a.p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "done",
			"usage": map[string]any{"input_tokens": in, "output_tokens": 100, "cached_tokens": 50, "cost_usd": 0.25, "model": "m"}}}).Expect(t, http.StatusOK)
	}
	r := a.run("usage", "--agent", agent.ID, "-o", "json")
	var rep struct {
		Days []struct {
			AgentID     string  `json:"agent_id"`
			Runs        int     `json:"runs"`
			InputTokens int64   `json:"input_tokens"`
			CostUSD     float64 `json:"cost_usd"`
		} `json:"days"`
		Total struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"total"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Days) != 1 || rep.Days[0].Runs != 2 ||
		rep.Days[0].InputTokens != 2000 || rep.Days[0].CostUSD != 0.5 || rep.Total.OutputTokens != 200 {
		t.Fatalf("usage -o json: %s", r)
	}
	if r := a.run("usage", "--agent", agent.ID, "-o", "table"); r.code != 0 || !strings.Contains(r.stdout, "INPUT_TOKENS") || !strings.Contains(r.stdout, "2000") {
		t.Fatalf("usage -o table: %s", r)
	}
	if r := a.run("usage", "-o", "jsonl"); r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 || !strings.Contains(r.stdout, agent.ID) {
		t.Fatalf("usage -o jsonl: %s", r)
	}
	if r := a.run("usage", "--from", "someday"); r.code != 1 || !strings.Contains(r.stderr, "from must be a day") {
		t.Fatalf("usage --from someday: %s", r)
	}
}

// TestCLI_AgentsBudgetSetsAndClearsAnAgentsLimits: `agents budget` sets
// the limits given, refuses a command line without any (exit 2), and
// --clear removes them.
func TestCLI_AgentsBudgetSetsAndClearsAnAgentsLimits(t *testing.T) {
	t.Parallel()
	a := startAdmin(t)
	agent := a.p.CreateAgent("limited")
	r := a.run("agents", "budget", agent.ID, "--per-run-tokens", "200000", "--per-day-cost", "5", "-o", "json")
	var got mesh.Agent
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Budget == nil || got.Budget.PerRun.Tokens != 200000 || got.Budget.PerDay.CostUSD != 5 {
		t.Fatalf("agents budget: %s", r)
	}
	if r := a.run("agents", "budget", agent.ID); r.code != 2 || !strings.Contains(r.stderr, "--clear") {
		t.Fatalf("agents budget without a limit: %s", r)
	}
	if r := a.run("agents", "budget", agent.ID, "--per-run-tokens", "-3"); r.code != 1 || !strings.Contains(r.stderr, "non-negative") {
		t.Fatalf("agents budget with a negative limit: %s", r)
	}
	r = a.run("agents", "budget", agent.ID, "--clear", "-o", "json")
	got = mesh.Agent{}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Budget != nil {
		t.Fatalf("agents budget --clear: %s", r)
	}
}

// TestCLI_WebhookVerbsSendTheirRequestsOnTheTablesRoutes: the webhooks
// verbs put their values where the routes take them: the id in the path,
// the state in the query, the rest in the body; a delete answers "done".
func TestCLI_WebhookVerbsSendTheirRequestsOnTheTablesRoutes(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	p := meshtest.StartProcess(t, bins.Platform, meshtest.ProcessOptions{DataDir: data, Args: []string{"--allow-private-webhooks"}})
	a := &admin{t: t, p: p, env: []string{"A2A_MESH_DATA_DIR=" + data, "A2A_MESH_API_BASE=" + p.APIBase}}
	r := a.run("webhooks", "create", "--url", "http://127.0.0.1:9/hook", "--type", "task_run.completed", "-o", "json")
	var wh struct {
		WebhookID string   `json:"webhook_id"`
		Secret    string   `json:"secret"`
		Types     []string `json:"types"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &wh) != nil || wh.WebhookID == "" || wh.Secret == "" || len(wh.Types) != 1 {
		t.Fatalf("webhooks create: %s", r)
	}
	if r := a.run("webhooks", "list", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, wh.WebhookID) {
		t.Errorf("webhooks list: %s", r)
	}
	if r := a.run("webhooks", "deliveries", wh.WebhookID, "--state", "dead", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"deliveries": []`) {
		t.Errorf("webhooks deliveries --state dead: %s", r)
	}
	if r := a.run("webhooks", "deliveries", wh.WebhookID, "--state", "lost"); r.code == 0 || !strings.Contains(r.stderr, "state must be retrying, dead or delivered") {
		t.Errorf("webhooks deliveries --state lost: %s", r)
	}
	if r := a.run("webhooks", "delete", wh.WebhookID); r.code != 0 || strings.TrimSpace(r.stdout+r.stderr) != "done" {
		t.Errorf("webhooks delete: %s", r)
	}
	if r := a.run("webhooks", "deliveries", wh.WebhookID); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("webhooks deliveries of a deleted webhook: %s", r)
	}
}
