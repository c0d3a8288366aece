package delegation

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Limits on routing rules.
const (
	maxRulesPerAgent = 100
	maxKeywords      = 50
	maxKeywordLen    = 200
	maxRuleName      = 200
	// maxRegexLen and maxRegexInsts bound a rule's expression: RE2 matches
	// in linear time, but a huge program would still make every task for
	// the agent slow to create.
	maxRegexLen   = 1000
	maxRegexInsts = 1000
)

// compiledRule is a rule ready to match.
type compiledRule struct {
	meshapi.RoutingRule
	keywords []string // lowercased
	re       *regexp.Regexp
}

func compile(r *meshapi.RoutingRule) (*compiledRule, error) {
	c := &compiledRule{RoutingRule: *r}
	for _, k := range r.Match.Keywords {
		c.keywords = append(c.keywords, strings.ToLower(strings.TrimSpace(k)))
	}
	if r.Match.Regex != "" {
		re, err := compileRegex(r.Match.Regex)
		if err != nil {
			return nil, err
		}
		c.re = re
	}
	return c, nil
}

// compileRegex compiles a rule's expression with Go's RE2 engine, within the
// size limits.
func compileRegex(expr string) (*regexp.Regexp, error) {
	if len(expr) > maxRegexLen {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "match.regex is longer than %d bytes", maxRegexLen)
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "match.regex does not compile: %v", err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil || len(prog.Inst) > maxRegexInsts {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "match.regex is too large (at most %d program instructions)", maxRegexInsts)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "match.regex does not compile: %v", err)
	}
	return re, nil
}

// matches reports whether the rule takes a task with this text and skill.
func (c *compiledRule) matches(text, skill string) bool {
	switch {
	case len(c.keywords) > 0:
		lower := strings.ToLower(text)
		return slices.ContainsFunc(c.keywords, func(k string) bool { return strings.Contains(lower, k) })
	case c.re != nil:
		return c.re.MatchString(text)
	case c.Match.Skill != "":
		return skill == c.Match.Skill
	}
	return false
}

// ruleBook is every agent's rules, in the order they are tried, kept from
// a watch on the bucket so a match costs no read.
type ruleBook struct {
	mirror  *bus.Mirror[meshapi.RoutingRule, *compiledRule]
	mu      sync.RWMutex
	byKey   map[string]*compiledRule
	byAgent map[string][]*compiledRule
}

func startRuleBook(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) (*ruleBook, error) {
	b := &ruleBook{byKey: map[string]*compiledRule{}, byAgent: map[string][]*compiledRule{}}
	m, err := bus.StartMirror(ctx, js, bus.BucketDelegation, bus.MirrorConfig[meshapi.RoutingRule, *compiledRule]{
		Project: func(key string, r *meshapi.RoutingRule, _ uint64) (*compiledRule, bool) {
			if !strings.HasPrefix(key, "rule.") {
				return nil, false
			}
			c, err := compile(r)
			if err != nil {
				log.Warn().Err(err).Str("rule_id", r.RuleID).Msg("stored routing rule does not compile; skipped")
				return nil, false
			}
			return c, true
		},
		OnChange: b.onChange,
		Logger:   log,
	})
	if err != nil {
		return nil, err
	}
	b.mirror = m
	if err := m.WaitReady(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// onChange applies a changed rule (nil: deleted) and reorders its agent's
// rules.
func (b *ruleBook) onChange(key string, p **compiledRule) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 || parts[0] != "rule" {
		return
	}
	agentID := parts[1]
	b.mu.Lock()
	defer b.mu.Unlock()
	if p == nil {
		delete(b.byKey, key)
	} else {
		b.byKey[key] = *p
	}
	var rules []*compiledRule
	for _, c := range b.byKey {
		if c.AgentID == agentID {
			rules = append(rules, c)
		}
	}
	sortRules(rules)
	b.byAgent[agentID] = rules
}

// sortRules orders rules as they are tried: higher priority first, then
// older first (rule ids are time-ordered).
func sortRules(rules []*compiledRule) {
	slices.SortFunc(rules, func(a, b *compiledRule) int {
		if a.Priority != b.Priority {
			return cmp.Compare(b.Priority, a.Priority)
		}
		return strings.Compare(a.RuleID, b.RuleID)
	})
}

// of returns an agent's rules in order.
func (b *ruleBook) of(agentID string) []*compiledRule {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.byAgent[agentID]
}

// match returns the first rule of the agent that takes the task.
func (b *ruleBook) match(agentID, text, skill string) *compiledRule {
	for _, r := range b.of(agentID) {
		if r.matches(text, skill) {
			return r
		}
	}
	return nil
}

func (b *ruleBook) stop() { _ = b.mirror.Stop() }

func (s *Service) handleMatch(ctx context.Context, in *meshapi.MatchRequest) (*meshapi.MatchResponse, error) {
	out := meshapi.MatchResponse{}
	if r := s.rules.match(in.AgentID, in.Text, in.Skill); r != nil {
		rule := r.RoutingRule
		out.Rule = &rule
	}
	return &out, nil
}

func (s *Service) handleRuleCreate(ctx context.Context, in *meshapi.CreateRoutingRuleRequest) (*meshapi.RoutingRule, error) {
	rule, err := s.newRule(ctx, in)
	if err != nil {
		return nil, err
	}
	if len(s.rules.of(rule.AgentID)) >= maxRulesPerAgent {
		return nil, mesh.Errorf(mesh.CodeConflict, "an agent has at most %d routing rules", maxRulesPerAgent)
	}
	rev, err := s.store.rules.Create(ctx, ruleKey(rule.AgentID, rule.RuleID), rule)
	if err != nil {
		return nil, err
	}
	// The next task is matched against the new rule at once.
	s.rules.mirror.Apply(ruleKey(rule.AgentID, rule.RuleID), rule, rev)
	return rule, nil
}

// newRule validates a create request into a rule.
func (s *Service) newRule(ctx context.Context, in *meshapi.CreateRoutingRuleRequest) (*meshapi.RoutingRule, error) {
	agent, err := s.agent(ctx, in.AgentID)
	if err != nil {
		return nil, err
	}
	if len(in.Name) > maxRuleName {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "name is longer than %d characters", maxRuleName)
	}
	match, err := checkMatch(in.Match, agent)
	if err != nil {
		return nil, err
	}
	target, err := s.checkTarget(ctx, in.Target, agent)
	if err != nil {
		return nil, err
	}
	rule := &meshapi.RoutingRule{
		RuleID: mesh.NewID(), AgentID: agent.ID, Name: in.Name, Match: match, Priority: in.Priority,
		Target: target, CreatedAt: time.Now().UTC(),
	}
	if _, err := compile(rule); err != nil {
		return nil, err
	}
	return rule, nil
}

// checkMatch checks that a rule matches on exactly one thing, and that the
// thing is sound: keywords that are not blank, an expression that compiles,
// a skill the agent has.
func checkMatch(m meshapi.RuleMatch, agent *mesh.Agent) (meshapi.RuleMatch, error) {
	kinds := 0
	for _, set := range []bool{m.Keywords != nil, m.Regex != "", m.Skill != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return m, mesh.Errorf(mesh.CodeInvalidRequest, "match needs exactly one of keywords, regex or skill")
	}
	switch {
	case m.Keywords != nil:
		if len(m.Keywords) == 0 || len(m.Keywords) > maxKeywords {
			return m, mesh.Errorf(mesh.CodeInvalidRequest, "match.keywords needs 1 to %d keywords", maxKeywords)
		}
		out := make([]string, 0, len(m.Keywords))
		for _, k := range m.Keywords {
			k = strings.TrimSpace(k)
			if k == "" || len(k) > maxKeywordLen {
				return m, mesh.Errorf(mesh.CodeInvalidRequest, "each keyword must be 1 to %d characters, not blank", maxKeywordLen)
			}
			out = append(out, k)
		}
		return meshapi.RuleMatch{Keywords: out}, nil
	case m.Regex != "":
		if _, err := compileRegex(m.Regex); err != nil {
			return m, err
		}
		return meshapi.RuleMatch{Regex: m.Regex}, nil
	}
	if !slices.ContainsFunc(agent.Skills, func(sk mesh.Skill) bool { return sk.ID == m.Skill }) {
		return m, mesh.Errorf(mesh.CodeInvalidRequest, "match.skill %q is not a skill of agent %s", m.Skill, agent.ID)
	}
	return meshapi.RuleMatch{Skill: m.Skill}, nil
}

// checkTarget checks where a rule sends tasks: another agent of the
// platform, or a registered partner (at its URL, or one given).
func (s *Service) checkTarget(ctx context.Context, t meshapi.RuleTarget, agent *mesh.Agent) (meshapi.RuleTarget, error) {
	switch {
	case t.AgentID != "" && (t.PartnerID != "" || t.URL != ""):
		return t, mesh.Errorf(mesh.CodeInvalidRequest, "target is an agent_id or a partner (partner_id, url), not both")
	case t.AgentID != "":
		if t.AgentID == agent.ID {
			return t, mesh.Errorf(mesh.CodeInvalidRequest, "target.agent_id is the rule's own agent: a task cannot be delegated to itself")
		}
		if _, err := s.agent(ctx, t.AgentID); err != nil {
			if errors.Is(err, mesh.ErrNotFound) {
				return t, mesh.Errorf(mesh.CodeInvalidRequest, "target.agent_id: agent %s not found", t.AgentID)
			}
			return t, err
		}
		return meshapi.RuleTarget{AgentID: t.AgentID}, nil
	case t.PartnerID != "":
		p, err := s.store.partner(ctx, t.PartnerID)
		if errors.Is(err, mesh.ErrNotFound) {
			return t, mesh.Errorf(mesh.CodeInvalidRequest, "target.partner_id: partner %s not found (register it with POST /a2a/partners)", t.PartnerID)
		}
		if err != nil {
			return t, err
		}
		url := t.URL
		if url == "" {
			url = p.URL
		}
		if err := checkPartnerURL(ctx, url, s.cfg.AllowPrivate); err != nil {
			return t, err
		}
		return meshapi.RuleTarget{PartnerID: p.PartnerID, URL: strings.TrimRight(url, "/")}, nil
	case t.URL != "":
		return t, mesh.Errorf(mesh.CodeInvalidRequest, "target.url needs the partner_id of a registered partner (its callbacks are signed with the partner's secret)")
	}
	return t, mesh.Errorf(mesh.CodeInvalidRequest, "target needs agent_id, or partner_id (and url)")
}

func (s *Service) handleRuleList(ctx context.Context, in *meshapi.ListRoutingRulesRequest) (*meshapi.RoutingRuleList, error) {
	if _, err := s.agent(ctx, in.AgentID); err != nil {
		return nil, err
	}
	out := meshapi.RoutingRuleList{Rules: []meshapi.RoutingRule{}}
	for _, r := range s.rules.of(in.AgentID) {
		out.Rules = append(out.Rules, r.RoutingRule)
	}
	return &out, nil
}

func (s *Service) handleRuleDelete(ctx context.Context, in *meshapi.DeleteRoutingRuleRequest) (*meshapi.Empty, error) {
	if !mesh.ValidID(in.AgentID) || !mesh.ValidID(in.RuleID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "routing rule not found")
	}
	key := ruleKey(in.AgentID, in.RuleID)
	if _, _, err := s.store.rules.Get(ctx, key); err != nil {
		if errors.Is(err, mesh.ErrNotFound) {
			return nil, mesh.Errorf(mesh.CodeNotFound, "routing rule %s of agent %s not found", in.RuleID, in.AgentID)
		}
		return nil, err
	}
	if err := s.store.rules.Delete(ctx, key, 0); err != nil {
		return nil, err
	}
	if err := s.rules.mirror.Sync(ctx); err != nil {
		return nil, err
	}
	return nil, nil
}

// agent returns an agent account.
func (s *Service) agent(ctx context.Context, id string) (*mesh.Agent, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %q not found", id)
	}
	return s.client.GetAgent(ctx, id)
}
