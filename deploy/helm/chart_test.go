// Package helm_test checks the a2a-mesh Helm chart by rendering it with the
// real helm (helm lint --strict, helm template) and validating every
// manifest strictly against the Kubernetes API types, then asserting what
// the platform needs of it: each service its own Deployment running `serve
// <service>`, probes on the port the process serves them on, secrets only
// from the Secret, non-root pods, a budget per service. It also checks that
// the values for the official NATS chart carry the shipped NATS settings.
package helm_test

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const (
	chartDir = "a2a-mesh"
	release  = "a2a-mesh"
	// publicURL is the one value the chart requires.
	publicURL = "https://mesh.example.com"
)

// helmBin is the helm the tests run: the pinned one `make test-deps`
// installs (deploy/helm/install-helm.sh), else one on PATH. Without helm
// the tests fail: the chart is not checked otherwise.
func helmBin(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("A2A_HOST_CLIS"); dir != "" {
		bin := filepath.Join(dir, "helm", "helm")
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("A2A_HOST_CLIS=%s holds no helm (%v): run make test-deps", dir, err)
		}
		return bin
	}
	if bin := filepath.Join("..", "..", ".hostclis", "helm", "helm"); fileExists(bin) {
		return bin
	}
	if bin, err := exec.LookPath("helm"); err == nil {
		return bin
	}
	t.Fatal("helm is not installed: make test-deps installs it (deploy/helm/install-helm.sh)")
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// helm runs helm and returns its standard output; a failure fails the test.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmResult(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func helmResult(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	// No repository, cache or plugin of the machine's user.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// rendered is one helm template output, decoded.
type rendered struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	ingresses   []*networkingv1.Ingress
	budgets     []*policyv1.PodDisruptionBudget
	accounts    []*corev1.ServiceAccount
	policies    []*networkingv1.NetworkPolicy
	podMons     []*monitor
	serviceMons []*monitor
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// render runs helm template with args and decodes every manifest strictly:
// a field the Kubernetes type does not have, or a kind the chart is not
// meant to make, fails the test.
func render(t *testing.T, args ...string) *rendered {
	t.Helper()
	out := helm(t, append([]string{"template", release, platformChart(t), "--namespace", "a2a-mesh"}, args...)...)
	r := &rendered{}
	for _, doc := range docSeparator.Split(out, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("a rendered manifest is not YAML: %v\n%s", err, doc)
		}
		var obj interface{ GetName() string }
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			r.deployments, obj = append(r.deployments, d), d
		case "v1 Service":
			s := &corev1.Service{}
			r.services, obj = append(r.services, s), s
		case "networking.k8s.io/v1 Ingress":
			i := &networkingv1.Ingress{}
			r.ingresses, obj = append(r.ingresses, i), i
		case "policy/v1 PodDisruptionBudget":
			b := &policyv1.PodDisruptionBudget{}
			r.budgets, obj = append(r.budgets, b), b
		case "v1 ServiceAccount":
			a := &corev1.ServiceAccount{}
			r.accounts, obj = append(r.accounts, a), a
		case "networking.k8s.io/v1 NetworkPolicy":
			p := &networkingv1.NetworkPolicy{}
			r.policies, obj = append(r.policies, p), p
		case "monitoring.coreos.com/v1 PodMonitor":
			m := &monitor{}
			r.podMons, obj = append(r.podMons, m), m
		case "monitoring.coreos.com/v1 ServiceMonitor":
			m := &monitor{}
			r.serviceMons, obj = append(r.serviceMons, m), m
		default:
			t.Fatalf("the chart renders a %s %s, which these tests do not know (and a Secret or ConfigMap would be a place for secrets)", tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s does not decode strictly as a Kubernetes %s: %v\n%s", tm.Kind, tm.Kind, err, doc)
		}
		if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 {
			t.Errorf("%s name %q: %v", tm.Kind, obj.GetName(), errs)
		}
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// values is what the tests read of a values file.
type values struct {
	PublicURL string `json:"publicURL"`
	Image     struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	} `json:"image"`
	NATS struct {
		URLs               []string `json:"urls"`
		User               string   `json:"user"`
		StreamReplicas     int      `json:"streamReplicas"`
		Advertise          string   `json:"advertise"`
		WebsocketAdvertise string   `json:"websocketAdvertise"`
	} `json:"nats"`
	Secret struct {
		Name string `json:"name"`
		Keys struct {
			NATSPassword   string `json:"natsPassword"`
			AuthIssuerSeed string `json:"authIssuerSeed"`
			OwnerToken     string `json:"ownerToken"`
		} `json:"keys"`
	} `json:"secret"`
	ExtraArgs   []string `json:"extraArgs"`
	MetricsPort int      `json:"metricsPort"`
	Services    map[string]struct {
		Replicas  *int32   `json:"replicas"`
		ExtraArgs []string `json:"extraArgs"`
	} `json:"services"`
	Gateway struct {
		Port    int `json:"port"`
		Service struct {
			Port int32 `json:"port"`
		} `json:"service"`
	} `json:"gateway"`
	Ingress struct {
		Enabled bool     `json:"enabled"`
		Hosts   []string `json:"hosts"`
	} `json:"ingress"`
}

func readValues(t *testing.T, path string) values {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v values
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// effective is the chart's values.yaml overlaid with a values file, as far
// as the tests read them (maps merge, other values replace).
func effective(t *testing.T, overlay string) values {
	t.Helper()
	v := readValues(t, filepath.Join(chartDir, "values.yaml"))
	if overlay == "" {
		v.PublicURL = publicURL
		return v
	}
	b, err := os.ReadFile(overlay)
	if err != nil {
		t.Fatal(err)
	}
	base := maps.Clone(v.Services)
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", overlay, err)
	}
	for name, svc := range v.Services {
		if svc.Replicas == nil {
			svc.Replicas = base[name].Replicas
		}
		v.Services[name] = svc
	}
	for name, svc := range base {
		if _, ok := v.Services[name]; !ok {
			v.Services[name] = svc
		}
	}
	return v
}

// chartRender is one render of the chart with the values it was given.
type chartRender struct {
	r *rendered
	v values
}

// renders are the two renders every check runs on: the defaults (with the
// one required value) and a values file that scales every service.
func renders(t *testing.T) map[string]chartRender {
	t.Helper()
	scaled := filepath.Join("testdata", "scaled-values.yaml")
	return map[string]chartRender{
		"defaults": {render(t, "--set", "publicURL="+publicURL), effective(t, "")},
		"scaled":   {render(t, "-f", scaled), effective(t, scaled)},
	}
}

// eachContainer runs check, in a subtest per render, on every service's
// Deployment and its only container.
func eachContainer(t *testing.T, check func(t *testing.T, c chartRender, svc string, d *appsv1.Deployment, ctr *corev1.Container)) {
	t.Helper()
	for name, c := range renders(t) {
		t.Run(name, func(t *testing.T) {
			for _, svc := range platform.Services {
				d := deploymentOf(t, c.r, svc)
				check(t, c, svc, d, onlyContainer(t, d))
			}
		})
	}
}

// TestChart_LintsStrictly: helm lint --strict passes with the defaults and
// with every service scaled.
func TestChart_LintsStrictly(t *testing.T) {
	t.Parallel()
	chart := platformChart(t)
	helm(t, "lint", "--strict", chart, "--set", "publicURL="+publicURL)
	helm(t, "lint", "--strict", chart, "-f", filepath.Join("testdata", "scaled-values.yaml"))
}

// TestChart_RefusesToRenderWithoutItsRequiredValues: without a public URL
// or a Secret name the chart does not render, and says what is missing.
func TestChart_RefusesToRenderWithoutItsRequiredValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "publicURL is required"},
		{[]string{"--set", "publicURL=" + publicURL, "--set", "secret.name="}, "secret.name is required"},
		{[]string{"--set", "publicURL=" + publicURL, "--set", "ingress.enabled=true"}, "name at least one host"},
	} {
		out, err := helmResult(t, append([]string{"template", release, platformChart(t)}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("helm template %v: err %v, want a refusal saying %q:\n%s", c.args, err, c.want, out)
		}
	}
}

// TestChart_EveryServiceRunsAsItsOwnDeployment: one Deployment per service
// of the platform, with the replicas its values give, running `serve
// <service>` against the configured NATS with R3 streams, selecting its own
// pods and no other service's.
func TestChart_EveryServiceRunsAsItsOwnDeployment(t *testing.T) {
	t.Parallel()
	for name, c := range renders(t) {
		t.Run(name, func(t *testing.T) {
			if len(c.r.deployments) != len(platform.Services) {
				t.Errorf("%d Deployments, want one for each of %v", len(c.r.deployments), platform.Services)
			}
			for _, svc := range platform.Services {
				d := deploymentOf(t, c.r, svc)
				if want := c.v.Services[svc].Replicas; want == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != *want {
					t.Errorf("%s: replicas %v, want %v", svc, d.Spec.Replicas, want)
				}
				sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
				if err != nil || sel.Empty() {
					t.Fatalf("%s: selector %v: %v", svc, d.Spec.Selector, err)
				}
				for _, other := range c.r.deployments {
					matches := sel.Matches(labels.Set(other.Spec.Template.Labels))
					if matches != (other == d) {
						t.Errorf("%s's selector matches %s's pods: %v", svc, other.Name, matches)
					}
				}
				ctr := onlyContainer(t, d)
				if len(ctr.Args) < 2 || ctr.Args[0] != "serve" || ctr.Args[1] != svc {
					t.Fatalf("%s runs %v, want serve %s", svc, ctr.Args, svc)
				}
				if want := "registry.example.com/a2a-mesh/platform:v1.2.3"; name == "scaled" && ctr.Image != want {
					t.Errorf("%s: image %s, want %s", svc, ctr.Image, want)
				}
				flags := parseFlags(t, svc, ctr.Args[2:])
				for flag, want := range map[string]string{
					"--nats-url":   strings.Join(c.v.NATS.URLs, ","),
					"--nats-user":  c.v.NATS.User,
					"--replicas":   fmt.Sprint(c.v.NATS.StreamReplicas),
					"--public-url": c.v.PublicURL,
				} {
					if got := flags[flag]; got != want {
						t.Errorf("%s: %s %q, want %q", svc, flag, got, want)
					}
				}
				for _, extra := range [][]string{c.v.ExtraArgs, c.v.Services[svc].ExtraArgs} {
					if len(extra) > 0 && !containsRun(ctr.Args, extra) {
						t.Errorf("%s: args %v lack the extra arguments %v", svc, ctr.Args, extra)
					}
				}
			}
		})
	}
}

// TestChart_ProbesAskTheProcessOnThePortItServes: every container serves
// /metrics, /healthz and /readyz where --metrics-listen says, declares that
// port, and its startup, liveness and readiness probes ask /healthz,
// /healthz and /readyz there; the gateway listens (--http) on the port its
// Service and Ingress send to.
func TestChart_ProbesAskTheProcessOnThePortItServes(t *testing.T) {
	t.Parallel()
	eachContainer(t, func(t *testing.T, c chartRender, svc string, d *appsv1.Deployment, ctr *corev1.Container) {
		flags := parseFlags(t, svc, ctr.Args[2:])
		metrics := listenPort(t, svc, flags["--metrics-listen"])
		if metrics != c.v.MetricsPort {
			t.Errorf("%s: --metrics-listen port %d, want metricsPort %d", svc, metrics, c.v.MetricsPort)
		}
		for kind, p := range map[string]struct {
			probe *corev1.Probe
			path  string
		}{
			"startup":   {ctr.StartupProbe, "/healthz"},
			"liveness":  {ctr.LivenessProbe, "/healthz"},
			"readiness": {ctr.ReadinessProbe, "/readyz"},
		} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", svc, kind)
				continue
			}
			if p.probe.HTTPGet.Path != p.path {
				t.Errorf("%s: %s probe asks %s, want %s", svc, kind, p.probe.HTTPGet.Path, p.path)
			}
			if port := containerPort(t, ctr, p.probe.HTTPGet.Port); port != metrics {
				t.Errorf("%s: %s probe asks port %d, the process serves it on %d", svc, kind, port, metrics)
			}
		}
		if svc == "gateway" {
			checkGatewayEndpoint(t, c.r, c.v, d, ctr, flags)
		}
		if svc == "delegation" {
			checkDelegationReachesTheGateway(t, c.r, flags["--gateway-url"])
		}
	})
}

// checkGatewayEndpoint: the gateway listens where its container port says, its
// Service selects the gateway's pods only and sends to that port, and the
// Ingress (when on) sends to the Service.
func checkGatewayEndpoint(t *testing.T, r *rendered, v values, d *appsv1.Deployment, ctr *corev1.Container, flags map[string]string) {
	t.Helper()
	httpPort := listenPort(t, "gateway", flags["--http"])
	if httpPort != v.Gateway.Port || containerPort(t, ctr, intstr.FromString("http")) != httpPort {
		t.Errorf("gateway: --http port %d, container port http %d, want %d", httpPort, containerPort(t, ctr, intstr.FromString("http")), v.Gateway.Port)
	}
	if len(r.services) != 1 {
		t.Fatalf("%d Services, want the gateway's", len(r.services))
	}
	s := r.services[0]
	sel := labels.SelectorFromSet(s.Spec.Selector)
	for _, other := range r.deployments {
		if sel.Matches(labels.Set(other.Spec.Template.Labels)) != (other == d) {
			t.Errorf("the gateway's Service selector %v and %s's pods: want it to select the gateway's only", s.Spec.Selector, other.Name)
		}
	}
	if errs := validation.IsDNS1035Label(s.Name); len(errs) > 0 {
		t.Errorf("Service name %q: %v", s.Name, errs)
	}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != v.Gateway.Service.Port || containerPort(t, ctr, s.Spec.Ports[0].TargetPort) != httpPort {
		t.Errorf("the gateway's Service ports %+v: want port %d to the gateway's %d", s.Spec.Ports, v.Gateway.Service.Port, httpPort)
	}
	if !v.Ingress.Enabled {
		if len(r.ingresses) != 0 {
			t.Error("an Ingress rendered although ingress.enabled is false")
		}
		return
	}
	if len(r.ingresses) != 1 {
		t.Fatalf("%d Ingresses, want 1", len(r.ingresses))
	}
	var hosts []string
	for _, rule := range r.ingresses[0].Spec.Rules {
		hosts = append(hosts, rule.Host)
		for _, p := range rule.HTTP.Paths {
			b := p.Backend.Service
			if b == nil || b.Name != s.Name || b.Port.Name != s.Spec.Ports[0].Name {
				t.Errorf("Ingress %s%s goes to %+v, want the gateway's Service %s port %s", rule.Host, p.Path, b, s.Name, s.Spec.Ports[0].Name)
			}
		}
	}
	if !slices.Equal(hosts, v.Ingress.Hosts) {
		t.Errorf("Ingress hosts %v, want %v", hosts, v.Ingress.Hosts)
	}
}

// checkDelegationReachesTheGateway: the delegation service calls the
// gateway's A2A endpoints through the gateway's Service.
func checkDelegationReachesTheGateway(t *testing.T, r *rendered, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || len(r.services) != 1 {
		t.Fatalf("delegation --gateway-url %q: %v", raw, err)
	}
	s := r.services[0]
	if u.Hostname() != s.Name || u.Port() != fmt.Sprint(s.Spec.Ports[0].Port) {
		t.Errorf("delegation --gateway-url %q, want the gateway's Service %s:%d", raw, s.Name, s.Spec.Ports[0].Port)
	}
}

// secretEnv are the environment variables serve reads secrets from.
var secretEnv = map[string]func(values) string{
	"A2A_MESH_NATS_PASSWORD": func(v values) string { return v.Secret.Keys.NATSPassword },
	"A2A_MESH_OWNER_TOKEN":   func(v values) string { return v.Secret.Keys.OwnerToken },
}

var secretLooking = regexp.MustCompile(`(?i)password|token|seed|secret|credential|key`)

// TestChart_SecretsComeOnlyFromTheSecret: the password reaches every
// service and the owner credential the gateway as secretKeyRefs of the
// configured Secret; the credential service's issuer seed is a file of that
// Secret that its non-root user can read; no argument or literal
// environment value carries a secret, and no secret-looking variable has a
// literal value.
func TestChart_SecretsComeOnlyFromTheSecret(t *testing.T) {
	t.Parallel()
	eachContainer(t, func(t *testing.T, c chartRender, svc string, d *appsv1.Deployment, ctr *corev1.Container) {
		got := map[string]bool{}
		for _, e := range ctr.Env {
			if e.Value != "" && secretLooking.MatchString(e.Name) {
				t.Errorf("%s: %s has a literal value", svc, e.Name)
			}
			key, ok := secretEnv[e.Name]
			if !ok {
				continue
			}
			ref := e.ValueFrom
			if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != c.v.Secret.Name || ref.SecretKeyRef.Key != key(c.v) || e.Value != "" {
				t.Errorf("%s: %s is %+v, want a secretKeyRef to %s/%s", svc, e.Name, e, c.v.Secret.Name, key(c.v))
			}
			got[e.Name] = true
		}
		if !got["A2A_MESH_NATS_PASSWORD"] {
			t.Errorf("%s: no A2A_MESH_NATS_PASSWORD: it cannot connect to NATS", svc)
		}
		if got["A2A_MESH_OWNER_TOKEN"] != (svc == "gateway") {
			t.Errorf("%s: A2A_MESH_OWNER_TOKEN given: %v (the gateway's only)", svc, got["A2A_MESH_OWNER_TOKEN"])
		}
		flags := parseFlags(t, svc, ctr.Args[2:])
		for flag := range flags {
			if secretLooking.MatchString(flag) && !strings.HasSuffix(flag, "-file") {
				t.Errorf("%s: %s %s on the command line", svc, flag, flags[flag])
			}
		}
		seed, hasSeed := flags["--auth-issuer-seed-file"]
		if hasSeed != (svc == bus.ServiceCredentials) {
			t.Errorf("%s: --auth-issuer-seed-file given: %v (the credential service's only)", svc, hasSeed)
		}
		if hasSeed {
			checkSecretFile(t, d, ctr, seed, c.v.Secret.Name, c.v.Secret.Keys.AuthIssuerSeed)
		}
		if svc == bus.ServiceCredentials {
			for flag, want := range map[string]string{"--nats-advertise": c.v.NATS.Advertise, "--nats-ws-advertise": c.v.NATS.WebsocketAdvertise} {
				if flags[flag] != want {
					t.Errorf("credentials: %s %q, want %q", flag, flags[flag], want)
				}
			}
		}
	})
}

// checkSecretFile: path is a file of a volume mounted from the Secret's key,
// readable by the pod's non-root group and by no one else.
func checkSecretFile(t *testing.T, d *appsv1.Deployment, ctr *corev1.Container, path, secret, key string) {
	t.Helper()
	for _, m := range ctr.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, vol := range d.Spec.Template.Spec.Volumes {
			if vol.Name != m.Name {
				continue
			}
			s := vol.Secret
			if s == nil || s.SecretName != secret || !m.ReadOnly {
				t.Fatalf("%s is on volume %s, want a read-only mount of Secret %s: %+v", path, vol.Name, secret, vol)
			}
			if !slices.Contains(s.Items, corev1.KeyToPath{Key: key, Path: rel}) {
				t.Errorf("%s is not the Secret's key %s: items %+v", path, key, s.Items)
			}
			if s.DefaultMode == nil || *s.DefaultMode != 0o440 {
				t.Errorf("the Secret's files have mode %v, want 0440 (the pod's group reads them, others do not)", s.DefaultMode)
			}
			if fs := d.Spec.Template.Spec.SecurityContext.FSGroup; fs == nil || *fs == 0 {
				t.Errorf("no non-root fsGroup: the non-root user cannot read %s", path)
			}
			return
		}
	}
	t.Errorf("%s is on no volume of the pod", path)
}

// TestChart_PodsRunLockedDown: every pod runs as a non-root user with a
// read-only root file system, no privilege escalation, no capabilities, no
// service account token, and with resource requests and a memory limit.
func TestChart_PodsRunLockedDown(t *testing.T) {
	t.Parallel()
	eachContainer(t, func(t *testing.T, _ chartRender, svc string, d *appsv1.Deployment, ctr *corev1.Container) {
		pod := d.Spec.Template.Spec
		ps := pod.SecurityContext
		if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
			t.Errorf("%s: pod security context %+v: want runAsNonRoot with a non-root user", svc, ps)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: the pod mounts a service account token it has no use for", svc)
		}
		sc := ctr.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: container security context %+v", svc, sc)
		}
		req := ctr.Resources.Requests
		if req.Cpu().IsZero() || req.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v: want CPU and memory requests and a memory limit", svc, ctr.Resources)
		}
	})
}

// TestChart_EachServiceHasADisruptionBudget: one PodDisruptionBudget per
// service, selecting exactly that service's pods.
func TestChart_EachServiceHasADisruptionBudget(t *testing.T) {
	t.Parallel()
	for name, c := range renders(t) {
		t.Run(name, func(t *testing.T) {
			if len(c.r.budgets) != len(platform.Services) {
				t.Errorf("%d PodDisruptionBudgets, want one per service", len(c.r.budgets))
			}
			for _, b := range c.r.budgets {
				sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
				if err != nil || sel.Empty() {
					t.Fatalf("%s: selector %v: %v", b.Name, b.Spec.Selector, err)
				}
				var selected []string
				for _, d := range c.r.deployments {
					if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
						selected = append(selected, d.Name)
					}
				}
				if len(selected) != 1 || b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() < 1 {
					t.Errorf("%s selects %v with maxUnavailable %v: want one service's pods, at least 1", b.Name, selected, b.Spec.MaxUnavailable)
				}
			}
		})
	}
}

func deploymentOf(t *testing.T, r *rendered, svc string) *appsv1.Deployment {
	t.Helper()
	var found *appsv1.Deployment
	for _, d := range r.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == svc {
			if found != nil {
				t.Fatalf("two Deployments for %s: %s and %s", svc, found.Name, d.Name)
			}
			found = d
		}
	}
	if found == nil {
		t.Fatalf("no Deployment runs %s", svc)
	}
	for k, v := range found.Spec.Template.Labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("%s: label %s=%q: %v", svc, k, v, errs)
		}
	}
	return found
}

func onlyContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%s has %d containers, want 1", d.Name, n)
	}
	return &d.Spec.Template.Spec.Containers[0]
}

// parseFlags reads `--flag value` pairs (and lone boolean flags) of serve's
// arguments after the service name; a flag given twice is an error.
func parseFlags(t *testing.T, svc string, args []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			t.Fatalf("%s: argument %q is not a flag", svc, a)
		}
		value := ""
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			value = args[i+1]
			i++
		}
		if _, dup := out[a]; dup {
			t.Errorf("%s: %s given twice", svc, a)
		}
		out[a] = value
	}
	return out
}

// containsRun says whether args holds want as consecutive elements.
func containsRun(args, want []string) bool {
	for i := 0; i+len(want) <= len(args); i++ {
		if slices.Equal(args[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func listenPort(t *testing.T, svc, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s: listen address %q: %v", svc, addr, err)
	}
	var n int
	if _, err := fmt.Sscan(port, &n); err != nil {
		t.Fatalf("%s: port of %q: %v", svc, addr, err)
	}
	return n
}

// containerPort resolves a port by name or number to one the container
// declares; 0 when it declares none such.
func containerPort(t *testing.T, ctr *corev1.Container, p intstr.IntOrString) int {
	t.Helper()
	for _, cp := range ctr.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return int(cp.ContainerPort)
		}
	}
	return 0
}
