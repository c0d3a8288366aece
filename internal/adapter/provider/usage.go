package provider

import (
	"encoding/json"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
)

// UsagePrefix starts a command's usage report on stderr: the rest of the
// line is a JSON object in the shape of mesh.Usage, e.g.
// `usage: {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.004}`.
// The last such line is the run's usage.
const UsagePrefix = "usage:"

// ParseUsageLine reads a usage report from one stderr line.
func ParseUsageLine(line string) (*mesh.Usage, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), UsagePrefix)
	if !ok {
		return nil, false
	}
	var u mesh.Usage
	if json.Unmarshal([]byte(strings.TrimSpace(rest)), &u) != nil || u.Check() != nil {
		return nil, false
	}
	return &u, true
}

// The hosts' own usage reports, each converted to mesh.Usage: input tokens
// always count the cached ones, which not every host does.

// claudeUsage reads Claude Code's result: usage (Anthropic's counts, where
// input_tokens leaves out the tokens read from and written to the cache),
// total_cost_usd and the model of the init message.
func claudeUsage(raw json.RawMessage, cost *float64, model string) *mesh.Usage {
	var u struct {
		Input       int64 `json:"input_tokens"`
		Output      int64 `json:"output_tokens"`
		CacheRead   int64 `json:"cache_read_input_tokens"`
		CacheCreate int64 `json:"cache_creation_input_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil && cost == nil {
		return nil
	}
	return checked(&mesh.Usage{InputTokens: u.Input + u.CacheRead + u.CacheCreate, OutputTokens: u.Output, CachedTokens: u.CacheRead, CostUSD: cost, Model: model})
}

// claudeModelUsage reads the counts of Claude Code's result per model
// (modelUsage), summed: a result that stopped at the budget carries its
// counts only there.
func claudeModelUsage(raw json.RawMessage, cost *float64, model string) *mesh.Usage {
	var models map[string]struct {
		Input       int64 `json:"inputTokens"`
		Output      int64 `json:"outputTokens"`
		CacheRead   int64 `json:"cacheReadInputTokens"`
		CacheCreate int64 `json:"cacheCreationInputTokens"`
	}
	if json.Unmarshal(raw, &models) != nil || len(models) == 0 {
		return nil
	}
	u := &mesh.Usage{CostUSD: cost, Model: model}
	for _, m := range models {
		u.InputTokens += m.Input + m.CacheRead + m.CacheCreate
		u.OutputTokens += m.Output
		u.CachedTokens += m.CacheRead
	}
	return checked(u)
}

// codexUsage reads the usage of Codex's turn.completed (OpenAI's counts:
// input_tokens include cached_input_tokens).
func codexUsage(raw json.RawMessage) *mesh.Usage {
	var u struct {
		Input  int64 `json:"input_tokens"`
		Cached int64 `json:"cached_input_tokens"`
		Output int64 `json:"output_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	return checked(&mesh.Usage{InputTokens: u.Input, OutputTokens: u.Output, CachedTokens: u.Cached})
}

// geminiUsage reads the stats of Gemini CLI's result (input_tokens are the
// prompt's, cached included; cached; output_tokens) and names the model
// when the stats name one only.
func geminiUsage(raw json.RawMessage, model string) *mesh.Usage {
	var s struct {
		Input  int64                      `json:"input_tokens"`
		Output int64                      `json:"output_tokens"`
		Cached int64                      `json:"cached"`
		Models map[string]json.RawMessage `json:"models"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if len(s.Models) == 1 {
		for m := range s.Models {
			model = m
		}
	}
	return checked(&mesh.Usage{InputTokens: s.Input, OutputTokens: s.Output, CachedTokens: s.Cached, Model: model})
}

// chatUsage reads a chat completion's usage (prompt_tokens, cached ones
// included; completion_tokens; prompt_tokens_details.cached_tokens).
func chatUsage(u map[string]any, model string) *mesh.Usage {
	if u == nil {
		return nil
	}
	raw, _ := json.Marshal(u)
	var c struct {
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
		Details    struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return checked(&mesh.Usage{InputTokens: c.Prompt, OutputTokens: c.Completion, CachedTokens: c.Details.Cached, Model: model})
}

// checked drops a report no host could have made, rather than fail a run
// that did its work over its bookkeeping.
func checked(u *mesh.Usage) *mesh.Usage {
	if u.Check() != nil || u.Empty() && u.Model == "" {
		return nil
	}
	return u
}
