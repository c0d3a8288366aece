package helm_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/a2amesh/a2amesh/internal/platform"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// callsArbitraryURLs are the services whose egress may go anywhere: the
// webhook service delivers to subscribers' URLs, the delegation service
// calls partner platforms (and the gateway).
var callsArbitraryURLs = []string{"webhooks", "delegation"}

// TestChart_NetworkPoliciesAdmitOnlyWhatEachServiceServes: with
// networkPolicy.enabled each service has a policy selecting its pods only,
// admitting the metrics port from the configured scrapers and (the
// gateway's) HTTP port from anywhere, and nothing else; its egress goes to
// NATS, DNS and the extra rules, and anywhere only for the services that
// call arbitrary URLs. Off by default.
func TestChart_NetworkPoliciesAdmitOnlyWhatEachServiceServes(t *testing.T) {
	t.Parallel()
	if r := render(t, "--set", "publicURL="+publicURL); len(r.policies) != 0 {
		t.Errorf("%d NetworkPolicies by default, want none", len(r.policies))
	}
	r := render(t, "-f", filepath.Join("testdata", "network-policy-values.yaml"))
	if len(r.policies) != len(platform.Services) {
		t.Errorf("%d NetworkPolicies, want one per service", len(r.policies))
	}
	scraper := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
	}
	nats := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "nats"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "nats"}},
	}
	for _, svc := range platform.Services {
		d := deploymentOf(t, r, svc)
		p := policyOf(t, r, d)
		if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("%s: policy types %v, want Ingress and Egress", svc, p.Spec.PolicyTypes)
		}
		ctr := onlyContainer(t, d)
		admitted := map[int]bool{}
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				n := containerPort(t, ctr, *port.Port)
				if n == 0 {
					t.Errorf("%s: admits port %v, which the container does not serve", svc, port.Port)
				}
				admitted[n] = true
				switch n {
				case 9200:
					if !slices.EqualFunc(rule.From, []networkingv1.NetworkPolicyPeer{scraper}, peerEqual) {
						t.Errorf("%s: metrics port admitted from %+v, want the configured scrapers only", svc, rule.From)
					}
				case 8080:
					if len(rule.From) != 0 {
						t.Errorf("gateway: HTTP admitted from %+v, want anywhere", rule.From)
					}
				}
			}
			if len(rule.Ports) == 0 {
				t.Errorf("%s: an ingress rule admits every port: %+v", svc, rule)
			}
		}
		want := map[int]bool{9200: true}
		if svc == "gateway" {
			want[8080] = true
		}
		if !maps.Equal(admitted, want) {
			t.Errorf("%s: admits ports %v, want %v", svc, admitted, want)
		}
		checkEgress(t, svc, p.Spec.Egress, nats)
	}
}

func checkEgress(t *testing.T, svc string, rules []networkingv1.NetworkPolicyEgressRule, nats networkingv1.NetworkPolicyPeer) {
	t.Helper()
	var toNATS, dnsUDP, dnsTCP, collector, anywhere bool
	for _, rule := range rules {
		if len(rule.To) == 0 && len(rule.Ports) == 0 {
			anywhere = true
		}
		for _, port := range rule.Ports {
			proto := corev1.ProtocolTCP
			if port.Protocol != nil {
				proto = *port.Protocol
			}
			switch {
			case port.Port.IntValue() == 4222 && slices.EqualFunc(rule.To, []networkingv1.NetworkPolicyPeer{nats}, peerEqual):
				toNATS = true
			case port.Port.IntValue() == 53 && proto == corev1.ProtocolUDP:
				dnsUDP = true
			case port.Port.IntValue() == 53 && proto == corev1.ProtocolTCP:
				dnsTCP = true
			case port.Port.IntValue() == 4318 && len(rule.To) == 1 && rule.To[0].NamespaceSelector != nil:
				collector = true
			}
		}
	}
	if !toNATS || !dnsUDP || !dnsTCP || !collector {
		t.Errorf("%s: egress %+v: to NATS %v, DNS over UDP %v and TCP %v, extraEgress %v; want all", svc, rules, toNATS, dnsUDP, dnsTCP, collector)
	}
	if anywhere != slices.Contains(callsArbitraryURLs, svc) {
		t.Errorf("%s: egress anywhere %v, want it only for %v", svc, anywhere, callsArbitraryURLs)
	}
}

// policyOf is the one NetworkPolicy selecting d's pods, which must select
// no other Deployment's.
func policyOf(t *testing.T, r *rendered, d *appsv1.Deployment) *networkingv1.NetworkPolicy {
	t.Helper()
	var found *networkingv1.NetworkPolicy
	for _, p := range r.policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || sel.Empty() {
			t.Fatalf("%s: pod selector %v: %v", p.Name, p.Spec.PodSelector, err)
		}
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		if found != nil {
			t.Fatalf("%s and %s both select %s's pods", found.Name, p.Name, d.Name)
		}
		found = p
	}
	if found == nil {
		t.Fatalf("no NetworkPolicy selects %s's pods", d.Name)
	}
	return found
}

func peerEqual(a, b networkingv1.NetworkPolicyPeer) bool {
	return a.IPBlock == nil && b.IPBlock == nil &&
		selectorEqual(a.NamespaceSelector, b.NamespaceSelector) && selectorEqual(a.PodSelector, b.PodSelector)
}

func selectorEqual(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	return metav1.FormatLabelSelector(a) == metav1.FormatLabelSelector(b)
}
