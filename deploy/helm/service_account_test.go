package helm_test

import (
	"testing"

	"github.com/a2amesh/a2amesh/internal/platform"
)

// TestChart_EveryPodRunsAsTheChartsServiceAccount: by default the chart
// makes one ServiceAccount, with its annotations and without an automounted
// token (the platform does not call the Kubernetes API), and every pod runs
// as it; with serviceAccount.create false the pods run as the named account
// and the chart makes none.
func TestChart_EveryPodRunsAsTheChartsServiceAccount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		args       []string
		wantCreate bool
		wantName   string
	}{
		{"defaults", nil, true, release},
		{"named", []string{"--set", "serviceAccount.name=mesh", "--set", "serviceAccount.annotations.team=platform"}, true, "mesh"},
		{"existing", []string{"--set", "serviceAccount.create=false", "--set", "serviceAccount.name=shared"}, false, "shared"},
		{"none", []string{"--set", "serviceAccount.create=false"}, false, "default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, append([]string{"--set", "publicURL=" + publicURL}, c.args...)...)
			if !c.wantCreate && len(r.accounts) != 0 {
				t.Errorf("%d ServiceAccounts with serviceAccount.create false, want none", len(r.accounts))
			}
			if c.wantCreate {
				if len(r.accounts) != 1 {
					t.Fatalf("%d ServiceAccounts, want 1", len(r.accounts))
				}
				a := r.accounts[0]
				if a.Name != c.wantName {
					t.Errorf("ServiceAccount %s, want %s", a.Name, c.wantName)
				}
				if a.AutomountServiceAccountToken == nil || *a.AutomountServiceAccountToken {
					t.Error("the ServiceAccount's token is automounted: the platform does not call the Kubernetes API")
				}
				if c.name == "named" && a.Annotations["team"] != "platform" {
					t.Errorf("ServiceAccount annotations %v, want serviceAccount.annotations", a.Annotations)
				}
			}
			for _, svc := range platform.Services {
				pod := deploymentOf(t, r, svc).Spec.Template.Spec
				if pod.ServiceAccountName != c.wantName {
					t.Errorf("%s runs as service account %q, want %q", svc, pod.ServiceAccountName, c.wantName)
				}
				if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
					t.Errorf("%s mounts a service account token", svc)
				}
			}
		})
	}
}
