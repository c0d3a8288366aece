// Package grafana_test keeps the dashboard and the alert rules to the
// metrics the platform exposes: every metric name their queries use, and
// every label they select or group by, is one a running platform reports.
package grafana_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

const (
	dashboardFile = "a2a-mesh-dashboard.json"
	rulesFile     = "a2a-mesh-alerts.yaml"
)

// exposed is what the platform reports: each series name (a histogram's
// _bucket, _sum and _count) and the labels it carries.
type exposed map[string][]string

// platformMetrics runs a platform in this process, takes one run from
// creation to its end through the API, and gathers its registry.
func platformMetrics(t *testing.T) exposed {
	t.Helper()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("watched")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "count me")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)
	p.GetTask(run.ID)
	families, err := p.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := exposed{}
	for _, f := range families {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		names := []string{f.GetName()}
		switch f.GetType().String() {
		case "HISTOGRAM":
			names = append(names, f.GetName()+"_bucket", f.GetName()+"_sum", f.GetName()+"_count")
			labels["le"] = true
		case "SUMMARY":
			names = append(names, f.GetName()+"_sum", f.GetName()+"_count")
			labels["quantile"] = true
		}
		keys := make([]string, 0, len(labels))
		for l := range labels {
			keys = append(keys, l)
		}
		sort.Strings(keys)
		for _, n := range names {
			out[n] = keys
		}
	}
	return out
}

// query is one PromQL expression and where it is.
type query struct{ where, expr string }

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: a dashboard needs a title, a uid and panels", dashboardFile)
	}
	var out []query
	for _, p := range d.Panels {
		if len(p.Targets) == 0 && p.Type != "row" {
			t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, query{where: "panel " + p.Title, expr: tg.Expr})
		}
	}
	return out
}

func ruleQueries(t *testing.T) []query {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []query
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: rule %q needs an alert name, a severity label and a summary", rulesFile, r.Alert)
			}
			out = append(out, query{where: "alert " + r.Alert, expr: r.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}
	return out
}

var (
	// quoted strings are dropped first: label values are not names.
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	// metricName is a name of the platform's own families or the Go
	// runtime's and the process's, as the registry reports them.
	metricName = regexp.MustCompile(`\b(?:a2amesh|go|process)_[a-zA-Z0-9_]+\b`)
	selector   = regexp.MustCompile(`\b((?:a2amesh|go|process)_[a-zA-Z0-9_]+)\s*\{([^}]*)\}`)
	matcher    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	grouping   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// problems lists the names and labels of q the platform does not expose.
func problems(q query, have exposed) []string {
	var out []string
	if strings.TrimSpace(q.expr) == "" {
		return []string{q.where + ": empty query"}
	}
	names := metricName.FindAllString(quoted.ReplaceAllString(q.expr, `""`), -1)
	if len(names) == 0 {
		out = append(out, fmt.Sprintf("%s: %q uses no metric of the platform", q.where, q.expr))
	}
	var labels []string
	for _, n := range names {
		l, ok := have[n]
		if !ok {
			out = append(out, fmt.Sprintf("%s: %s is not a metric the platform exposes (query %q)", q.where, n, q.expr))
		}
		labels = append(labels, l...)
	}
	for _, m := range selector.FindAllStringSubmatch(q.expr, -1) {
		for _, l := range matcher.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(have[m[1]], l[1]) {
				out = append(out, fmt.Sprintf("%s: %s has no label %q (it has %v)", q.where, m[1], l[1], have[m[1]]))
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(q.expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(labels, l) {
				out = append(out, fmt.Sprintf("%s: grouped by %q, a label none of its metrics has (query %q)", q.where, l, q.expr))
			}
		}
	}
	return out
}

// TestDashboardAndAlerts_UseOnlyMetricsThePlatformExposes: a renamed
// metric or label fails here rather than leaving a panel empty or an alert
// that can never fire.
func TestDashboardAndAlerts_UseOnlyMetricsThePlatformExposes(t *testing.T) {
	t.Parallel()
	have := platformMetrics(t)
	queries := append(dashboardQueries(t), ruleQueries(t)...)
	for _, q := range queries {
		for _, p := range problems(q, have) {
			t.Error(p)
		}
	}
	// What the dashboard is for: each of these has a panel.
	all := ""
	for _, q := range queries {
		all += q.expr + "\n"
	}
	for _, want := range []string{"a2amesh_task_runs", "a2amesh_claim_latency_seconds_bucket", "a2amesh_task_run_duration_seconds_bucket",
		"a2amesh_runtimes_online", "a2amesh_http_requests_total", "a2amesh_http_request_duration_seconds_bucket",
		"a2amesh_webhook_deliveries_total", "a2amesh_events_published_total"} {
		if !strings.Contains(all, want) {
			t.Errorf("no query uses %s", want)
		}
	}
}

// TestCheck_RefusesANameOrLabelThePlatformDoesNotExpose: the check itself
// catches a misspelt metric, a label the metric lacks and a grouping by a
// label none of the metrics carries.
func TestCheck_RefusesANameOrLabelThePlatformDoesNotExpose(t *testing.T) {
	t.Parallel()
	have := exposed{"a2amesh_http_requests_total": {"code", "method", "route"}}
	for _, expr := range []string{
		`sum(rate(a2amesh_http_request_total[5m]))`,
		`sum(rate(a2amesh_http_requests_total{path="/x"}[5m]))`,
		`sum by (path) (rate(a2amesh_http_requests_total[5m]))`,
		`vector(1)`,
	} {
		if len(problems(query{where: "test", expr: expr}, have)) == 0 {
			t.Errorf("check passed %q", expr)
		}
	}
	good := `sum by (method, route) (rate(a2amesh_http_requests_total{code=~"5.."}[5m]))`
	if p := problems(query{where: "test", expr: good}, have); len(p) > 0 {
		t.Errorf("check refused a query that uses only what is exposed: %v", p)
	}
}
