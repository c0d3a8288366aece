package helm_test

import (
	"path/filepath"
	"testing"

	"github.com/a2amesh/a2amesh/internal/platform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// monitor is the part of a Prometheus Operator PodMonitor or ServiceMonitor
// (monitoring.coreos.com/v1) the chart writes; decoding strictly into it
// refuses a field the CRDs do not have under these names.
type monitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		PodMetricsEndpoints []scrapeEndpoint `json:"podMetricsEndpoints,omitempty"`
		Endpoints           []scrapeEndpoint `json:"endpoints,omitempty"`
	} `json:"spec"`
}

type scrapeEndpoint struct {
	Port     string `json:"port"`
	Path     string `json:"path"`
	Interval string `json:"interval,omitempty"`
}

// TestChart_MonitorsScrapeEveryServicesMetricsPort: with
// metrics.podMonitor and metrics.serviceMonitor on, each service has a
// PodMonitor selecting its pods, and a ServiceMonitor selecting a Service of
// its pods, both scraping /metrics on the port the process serves it on, in
// the release's namespace, with the configured labels and interval. Off by
// default.
func TestChart_MonitorsScrapeEveryServicesMetricsPort(t *testing.T) {
	t.Parallel()
	if r := render(t, "--set", "publicURL="+publicURL); len(r.podMons)+len(r.serviceMons) != 0 {
		t.Errorf("%d PodMonitors and %d ServiceMonitors by default, want none", len(r.podMons), len(r.serviceMons))
	}
	r := render(t, "-f", filepath.Join("testdata", "monitoring-values.yaml"))
	if len(r.podMons) != len(platform.Services) || len(r.serviceMons) != len(platform.Services) {
		t.Errorf("%d PodMonitors and %d ServiceMonitors, want one of each per service", len(r.podMons), len(r.serviceMons))
	}
	for _, svc := range platform.Services {
		d := deploymentOf(t, r, svc)
		ctr := onlyContainer(t, d)
		pods := labels.Set(d.Spec.Template.Labels)

		pm := monitorOf(t, r.podMons, func(sel labels.Selector) bool { return sel.Matches(pods) }, svc)
		checkMonitor(t, pm, pm.Spec.PodMetricsEndpoints, "15s")
		if port := pm.Spec.PodMetricsEndpoints[0].Port; containerPortNamed(ctr, port) != 9200 {
			t.Errorf("%s: PodMonitor scrapes port %q, the process serves metrics on 9200", svc, port)
		}

		var target *corev1.Service
		sm := monitorOf(t, r.serviceMons, func(sel labels.Selector) bool {
			for _, s := range r.services {
				if sel.Matches(labels.Set(s.Labels)) && labels.SelectorFromSet(s.Spec.Selector).Matches(pods) {
					target = s
					return true
				}
			}
			return false
		}, svc)
		checkMonitor(t, sm, sm.Spec.Endpoints, "20s")
		scraped := 0
		for _, s := range r.services {
			sel, _ := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			if sel.Matches(labels.Set(s.Labels)) {
				scraped++
			}
		}
		if scraped != 1 {
			t.Errorf("%s: ServiceMonitor selects %d Services, want its metrics Service only", svc, scraped)
		}
		for _, other := range r.deployments {
			if other != d && labels.SelectorFromSet(target.Spec.Selector).Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("%s: Service %s also selects %s's pods", svc, target.Name, other.Name)
			}
		}
		var port *corev1.ServicePort
		for i := range target.Spec.Ports {
			if target.Spec.Ports[i].Name == sm.Spec.Endpoints[0].Port {
				port = &target.Spec.Ports[i]
			}
		}
		if port == nil || containerPort(t, ctr, port.TargetPort) != 9200 {
			t.Errorf("%s: ServiceMonitor scrapes port %q of Service %s (%+v), want one to the metrics port 9200", svc, sm.Spec.Endpoints[0].Port, target.Name, target.Spec.Ports)
		}
	}
}

// monitorOf is the one monitor whose selector picks (per selects) the
// service's pods.
func monitorOf(t *testing.T, mons []*monitor, selects func(labels.Selector) bool, svc string) *monitor {
	t.Helper()
	var found *monitor
	for _, m := range mons {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Fatalf("%s %s: selector %v: %v", m.Kind, m.Name, m.Spec.Selector, err)
		}
		if !selects(sel) {
			continue
		}
		if found != nil {
			t.Fatalf("%s and %s both select %s", found.Name, m.Name, svc)
		}
		found = m
	}
	if found == nil {
		t.Fatalf("no monitor selects %s", svc)
	}
	return found
}

func checkMonitor(t *testing.T, m *monitor, eps []scrapeEndpoint, interval string) {
	t.Helper()
	if len(eps) != 1 || eps[0].Path != "/metrics" || eps[0].Interval != interval {
		t.Fatalf("%s %s: endpoints %+v, want one scraping /metrics every %s", m.Kind, m.Name, eps, interval)
	}
	if m.Labels["release"] != "prometheus" {
		t.Errorf("%s %s: labels %v lack the configured release=prometheus", m.Kind, m.Name, m.Labels)
	}
	if ns := m.Spec.NamespaceSelector.MatchNames; len(ns) != 1 || ns[0] != "a2a-mesh" {
		t.Errorf("%s %s: namespaces %v, want the release's", m.Kind, m.Name, ns)
	}
}

func containerPortNamed(ctr *corev1.Container, name string) int32 {
	for _, p := range ctr.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}
