package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestUsage_EachHostsReportBecomesTheOneShape: what each host prints about
// its usage becomes mesh.Usage, input tokens counting the cached ones
// whatever the host's own convention.
func TestUsage_EachHostsReportBecomesTheOneShape(t *testing.T) {
	cost := 0.0123
	cases := []struct {
		name   string
		parser hostParser
		lines  string
		want   mesh.Usage
	}{
		{"claude", newClaudeParser(func(string) {}),
			`{"type":"system","subtype":"init","model":"claude-sonnet-4-5","session_id":"s"}` + "\n" +
				`{"type":"result","subtype":"success","result":"ok","total_cost_usd":0.0123,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}}` + "\n",
			mesh.Usage{InputTokens: 115, OutputTokens: 7, CachedTokens: 100, CostUSD: &cost, Model: "claude-sonnet-4-5"}},
		{"codex", newCodexParser(func(string) {}),
			`{"type":"thread.started","thread_id":"t"}` + "\n" +
				`{"type":"item.completed","item":{"type":"agent_message","text":"ok"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":20,"output_tokens":9}}` + "\n",
			mesh.Usage{InputTokens: 120, OutputTokens: 9, CachedTokens: 20}},
		{"gemini", newGeminiParser(func(string) {}),
			`{"type":"init","session_id":"s","model":"auto"}` + "\n" +
				`{"type":"message","role":"assistant","content":"ok","delta":true}` + "\n" +
				`{"type":"result","status":"success","stats":{"total_tokens":31,"input_tokens":24,"output_tokens":7,"cached":4,"input":20,"duration_ms":5,"tool_calls":0,"models":{"gemini-2.5-flash":{"total_tokens":31}}}}` + "\n",
			mesh.Usage{InputTokens: 24, OutputTokens: 7, CachedTokens: 4, Model: "gemini-2.5-flash"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.parser.Write([]byte(c.lines)); err != nil {
				t.Fatal(err)
			}
			out, err := c.parser.outcome(nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if out.usage == nil {
				t.Fatalf("no usage (metadata %v)", out.metadata)
			}
			got, want := *out.usage, c.want
			if got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens || got.CachedTokens != want.CachedTokens ||
				got.Model != want.Model || got.Cost() != want.Cost() || (got.CostUSD == nil) != (want.CostUSD == nil) {
				t.Fatalf("usage %+v, want %+v", got, want)
			}
		})
	}
}

func TestUsage_ChatCompletionsAndCommandLines(t *testing.T) {
	u := chatUsage(map[string]any{"prompt_tokens": 12.0, "completion_tokens": 7.0, "prompt_tokens_details": map[string]any{"cached_tokens": 2.0}}, "gpt")
	if u == nil || u.InputTokens != 12 || u.OutputTokens != 7 || u.CachedTokens != 2 || u.Model != "gpt" {
		t.Fatalf("chat usage %+v", u)
	}
	if u, ok := ParseUsageLine(`usage: {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.004}`); !ok || u.Tokens() != 1500 || u.Cost() != 0.004 {
		t.Fatalf("usage line: %+v %v", u, ok)
	}
	for _, line := range []string{`usage: {"input_tokens": -1}`, `usage: nope`, `progress: 10% usage`, `usage: {"input_tokens": 1, "cached_tokens": 2}`} {
		if _, ok := ParseUsageLine(line); ok {
			t.Errorf("%q read as usage", line)
		}
	}
}

// TestUsage_ClaudeStoppedAtItsBudgetIsABudgetErrorWithWhatItSpent: Claude
// Code's result of a run stopped at --max-budget-usd leaves its usage at
// zero and counts per model: the failure is a BudgetError carrying those
// counts and the cost.
func TestUsage_ClaudeStoppedAtItsBudgetIsABudgetErrorWithWhatItSpent(t *testing.T) {
	p := newClaudeParser(func(string) {})
	lines := `{"type":"system","subtype":"init","model":"claude-opus-5-5","session_id":"s"}` + "\n" +
		`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":4.02,"errors":["Reached maximum budget ($0.5)"],` +
		`"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{"claude-opus-5-5":{"inputTokens":1000000,"outputTokens":1000,"cacheReadInputTokens":5,"costUSD":4.02}}}` + "\n"
	if _, err := p.Write([]byte(lines)); err != nil {
		t.Fatal(err)
	}
	_, err := p.outcome(nil, "")
	var budget *BudgetError
	if !errors.As(err, &budget) || budget.Usage == nil {
		t.Fatalf("err %v, want a BudgetError with usage", err)
	}
	if u := budget.Usage; u.InputTokens != 1000005 || u.OutputTokens != 1000 || u.CachedTokens != 5 || u.Cost() != 4.02 || u.Model != "claude-opus-5-5" {
		t.Fatalf("usage %+v", *u)
	}
	if !strings.Contains(err.Error(), "stopped at the budget limit after spending $4.0200") {
		t.Fatalf("message %q", err)
	}
}

// TestClaude_TheRunsBudgetLowersTheAdaptersLimit: --max-budget-usd is the
// smaller of the adapter's limit and what the run's budget leaves it.
func TestClaude_TheRunsBudgetLowersTheAdaptersLimit(t *testing.T) {
	for _, c := range []struct {
		adapter float64
		run     *adapterapi.Budget
		want    float64
	}{
		{0, nil, 0},
		{1.5, nil, 1.5},
		{0, &adapterapi.Budget{CostUSD: 0.25}, 0.25},
		{1.5, &adapterapi.Budget{CostUSD: 0.25}, 0.25},
		{0.1, &adapterapi.Budget{CostUSD: 0.25}, 0.1},
		{1.5, &adapterapi.Budget{Tokens: 1000}, 1.5},
	} {
		c2 := &Claude{cfg: ClaudeConfig{MaxBudgetUSD: c.adapter}}
		if got := c2.maxBudgetUSD(&Task{Request: adapterapi.RunTaskRequest{Budget: c.run}}); got != c.want {
			t.Errorf("adapter %v, run %+v: %v, want %v", c.adapter, c.run, got, c.want)
		}
	}
}
