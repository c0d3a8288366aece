package mesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Usage is what a run's agent host spent, as the host reported it: the one
// shape every provider reports in (output.usage of the adapter's answer),
// the run record keeps (TaskRun.Usage, TaskRun.UsageTotal), the
// task_run.usage event carries and the totals per agent and day add up
// (docs/usage.md). A host that does not report a figure leaves it zero
// (CostUSD nil): nothing is estimated.
type Usage struct {
	// InputTokens counts every prompt token the model read, cached ones
	// included.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts the tokens the model wrote (reasoning included
	// where the host counts it there).
	OutputTokens int64 `json:"output_tokens"`
	// CachedTokens counts the input tokens served from the model's prompt
	// cache (a part of InputTokens).
	CachedTokens int64 `json:"cached_tokens,omitempty"`
	// CostUSD is the cost in US dollars, when the host gives one.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// Model is the model that did the work, when the host names it.
	Model string `json:"model,omitempty"`
}

// maxUsageTokens bounds each token count a report may carry: far above any
// real run, low enough that sums over a year of runs cannot overflow.
const maxUsageTokens = 1 << 40

// Tokens is the run's token count: input plus output.
func (u *Usage) Tokens() int64 {
	if u == nil {
		return 0
	}
	return u.InputTokens + u.OutputTokens
}

// Cost is the cost in US dollars, 0 when none was reported.
func (u *Usage) Cost() float64 {
	if u == nil || u.CostUSD == nil {
		return 0
	}
	return *u.CostUSD
}

// Empty reports whether u counts nothing.
func (u *Usage) Empty() bool {
	return u == nil || u.InputTokens == 0 && u.OutputTokens == 0 && u.CachedTokens == 0 && u.CostUSD == nil
}

// Plus returns u and v added up. The model stays when both name the same
// one (or one names none); a sum of different models names none.
func (u *Usage) Plus(v *Usage) *Usage {
	out := &Usage{}
	for _, x := range []*Usage{u, v} {
		if x == nil {
			continue
		}
		out.InputTokens += x.InputTokens
		out.OutputTokens += x.OutputTokens
		out.CachedTokens += x.CachedTokens
		if x.CostUSD != nil {
			c := out.Cost() + *x.CostUSD
			out.CostUSD = &c
		}
	}
	switch {
	case u == nil || u.Model == "":
		if v != nil {
			out.Model = v.Model
		}
	case v == nil || v.Model == "" || v.Model == u.Model:
		out.Model = u.Model
	}
	return out
}

// Check refuses a report no host could have made: negative or absurd
// counts, more cached tokens than input tokens, a negative or non-finite
// cost.
func (u *Usage) Check() error {
	for name, n := range map[string]int64{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "cached_tokens": u.CachedTokens} {
		if n < 0 || n > maxUsageTokens {
			return Errorf(CodeInvalidRequest, "usage.%s must be between 0 and %d", name, int64(maxUsageTokens))
		}
	}
	if u.CachedTokens > u.InputTokens {
		return Errorf(CodeInvalidRequest, "usage.cached_tokens (%d) cannot exceed usage.input_tokens (%d)", u.CachedTokens, u.InputTokens)
	}
	if c := u.CostUSD; c != nil && (*c < 0 || math.IsInf(*c, 0) || math.IsNaN(*c)) {
		return Errorf(CodeInvalidRequest, "usage.cost_usd must be a finite, non-negative number")
	}
	if len(u.Model) > 200 {
		return Errorf(CodeInvalidRequest, "usage.model is longer than 200 bytes")
	}
	return nil
}

// OutputUsage reads output.usage of a run's output (the adapter's answer):
// nil when there is none, an INVALID_REQUEST error when it is not the
// documented shape.
func OutputUsage(output json.RawMessage) (*Usage, error) {
	if !bytes.Contains(output, []byte(`"usage"`)) {
		// Most outputs carry none: no decode on the completion's path.
		return nil, nil
	}
	var out struct {
		Usage json.RawMessage `json:"usage"`
	}
	if len(output) == 0 || json.Unmarshal(output, &out) != nil || len(out.Usage) == 0 || string(out.Usage) == "null" {
		return nil, nil
	}
	var u Usage
	if err := json.Unmarshal(out.Usage, &u); err != nil {
		return nil, Errorf(CodeInvalidRequest, "output.usage must be an object of token counts (input_tokens, output_tokens, cached_tokens), cost_usd and model: %v", err)
	}
	if err := u.Check(); err != nil {
		return nil, err
	}
	return &u, nil
}

// UsageDay is the day a run's usage counts in, for the totals per day and
// the daily budgets: the UTC day the run was created.
func UsageDay(createdAt time.Time) string { return createdAt.UTC().Format(time.DateOnly) }

// UsageTotal is what one agent's runs spent on one day.
type UsageTotal struct {
	AgentID string `json:"agent_id"`
	// Day is the UTC day (YYYY-MM-DD) the runs were created on.
	Day string `json:"day"`
	// Runs counts the runs that reported usage.
	Runs int `json:"runs"`
	Usage
}

// Budget limits what an agent's runs may spend (docs/usage.md, "Budgets").
// A zero limit is no limit.
type Budget struct {
	// PerRun bounds one run, its delegated runs included.
	PerRun *Limit `json:"per_run,omitempty"`
	// PerDay bounds the agent's runs created on one UTC day.
	PerDay *Limit `json:"per_day,omitempty"`
}

// Limit is a bound on tokens (input plus output), on cost, or both.
type Limit struct {
	Tokens  int64   `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Check refuses negative or non-finite limits.
func (b *Budget) Check() error {
	if b == nil {
		return nil
	}
	for name, l := range map[string]*Limit{"per_run": b.PerRun, "per_day": b.PerDay} {
		if l == nil {
			continue
		}
		if l.Tokens < 0 || l.CostUSD < 0 || math.IsInf(l.CostUSD, 0) || math.IsNaN(l.CostUSD) {
			return Errorf(CodeInvalidRequest, "budget.%s: tokens and cost_usd must be non-negative numbers", name)
		}
	}
	return nil
}

// Passed says how u passes the limit ("" when it does not): which bound and
// by how much. A usage that reaches a limit exactly has not passed it.
func (l *Limit) Passed(u *Usage) string {
	if l == nil || u == nil {
		return ""
	}
	if l.Tokens > 0 && u.Tokens() > l.Tokens {
		return fmt.Sprintf("%d tokens spent, limit %d", u.Tokens(), l.Tokens)
	}
	if l.CostUSD > 0 && u.Cost() > l.CostUSD {
		return fmt.Sprintf("$%.4f spent, limit $%.4f", u.Cost(), l.CostUSD)
	}
	return ""
}

// Left is what u leaves of the limit: each bound less what u spent, nil
// when the limit has no bound. A bound already reached leaves its
// smallest amount (one token, a millionth of a dollar), never 0, which
// would read as no bound.
func (l *Limit) Left(u *Usage) *Limit {
	if l == nil || l.Tokens <= 0 && l.CostUSD <= 0 {
		return nil
	}
	left := &Limit{}
	if l.Tokens > 0 {
		left.Tokens = max(l.Tokens-u.Tokens(), 1)
	}
	if l.CostUSD > 0 {
		left.CostUSD = max(l.CostUSD-u.Cost(), 0.000001)
	}
	return left
}

// Reached says how u has reached the limit ("" when it has not): a run
// created then would pass it with its first token.
func (l *Limit) Reached(u *Usage) string {
	if l == nil || u == nil {
		return ""
	}
	if l.Tokens > 0 && u.Tokens() >= l.Tokens {
		return fmt.Sprintf("%d tokens spent, limit %d", u.Tokens(), l.Tokens)
	}
	if l.CostUSD > 0 && u.Cost() >= l.CostUSD {
		return fmt.Sprintf("$%.4f spent, limit $%.4f", u.Cost(), l.CostUSD)
	}
	return ""
}
