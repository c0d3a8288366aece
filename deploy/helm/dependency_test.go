package helm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The official NATS chart is a dependency of the a2a-mesh chart, fetched
// from its repository by `helm dependency build` at the version Chart.lock
// pins; the repository keeps no copy of it. The tests render and lint the
// platform's own templates (platformChart); the NATS chart's configuration
// is checked through its values (nats_values_test.go).

const (
	natsChartRepository = "https://nats-io.github.io/k8s/helm/charts/"
	natsChartCondition  = "nats.enabled"
)

// chartMeta is the part of Chart.yaml and Chart.lock the tests read.
type chartMeta struct {
	Dependencies []struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		Repository string `json:"repository"`
		Condition  string `json:"condition"`
	} `json:"dependencies"`
	Digest string `json:"digest"`
}

func readChartMeta(t *testing.T, name string) chartMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var m chartMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// platformChart is a copy of the chart without its dependency on the NATS
// chart, as helm renders it with nats.enabled=false once the dependency is
// built: the platform's own manifests. (helm renders no chart whose
// dependency is not built, whatever its condition says.)
func platformChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), chartDir)
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, "Chart.yaml")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "dependencies")
	if b, err = yaml.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Chart.lock", "charts"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestChart_InstallsTheOfficialNATSChartInTheSameRelease: Chart.yaml
// depends on the official NATS chart at one exact version, switched by
// nats.enabled (on by default), and the services' default URL is the
// Service that chart makes under the values' fullnameOverride.
func TestChart_InstallsTheOfficialNATSChartInTheSameRelease(t *testing.T) {
	t.Parallel()
	meta := readChartMeta(t, "Chart.yaml")
	if len(meta.Dependencies) != 1 {
		t.Fatalf("Chart.yaml has %d dependencies, want the NATS chart", len(meta.Dependencies))
	}
	dep := meta.Dependencies[0]
	if dep.Name != "nats" || dep.Repository != natsChartRepository || dep.Condition != natsChartCondition {
		t.Errorf("dependency %+v, want nats from %s on %s", dep, natsChartRepository, natsChartCondition)
	}
	if strings.ContainsAny(dep.Version, "^~<>=*x ") || dep.Version == "" {
		t.Errorf("NATS chart version %q: pin one version", dep.Version)
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		NATS struct {
			Enabled          *bool    `json:"enabled"`
			FullnameOverride string   `json:"fullnameOverride"`
			URLs             []string `json:"urls"`
		} `json:"nats"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.NATS.Enabled == nil || !*v.NATS.Enabled {
		t.Error("nats.enabled is not on by default: one helm install would not run NATS")
	}
	if want := "nats://" + v.NATS.FullnameOverride + ":4222"; len(v.NATS.URLs) != 1 || v.NATS.URLs[0] != want {
		t.Errorf("nats.urls %v, want the NATS chart's Service %s", v.NATS.URLs, want)
	}
}

// TestChart_LockMatchesItsDependencies: Chart.lock pins the version
// Chart.yaml names, and helm takes it as in sync with Chart.yaml: `helm
// dependency build` goes on to fetching the chart rather than refusing the
// lock.
func TestChart_LockMatchesItsDependencies(t *testing.T) {
	t.Parallel()
	want, lock := readChartMeta(t, "Chart.yaml"), readChartMeta(t, "Chart.lock")
	if len(lock.Dependencies) != len(want.Dependencies) || lock.Digest == "" {
		t.Fatalf("Chart.lock %+v, want the dependencies of Chart.yaml and a digest", lock)
	}
	for i, d := range lock.Dependencies {
		if w := want.Dependencies[i]; d.Name != w.Name || d.Version != w.Version || d.Repository != w.Repository {
			t.Errorf("Chart.lock pins %+v, Chart.yaml names %+v", d, w)
		}
	}
	dir := filepath.Join(t.TempDir(), chartDir)
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "charts")); err != nil {
		t.Fatal(err)
	}
	// With no repository added, helm stops at fetching; a lock out of sync
	// is refused before that.
	out, err := helmResult(t, "dependency", "build", dir)
	if strings.Contains(out, "out of sync") {
		t.Fatalf("helm dependency build refuses Chart.lock: %v\n%s", err, out)
	}
	if err == nil && !fileExists(filepath.Join(dir, "charts", "nats-"+want.Dependencies[0].Version+".tgz")) {
		t.Fatalf("helm dependency build fetched no NATS chart %s:\n%s", want.Dependencies[0].Version, out)
	}
	if err != nil && !strings.Contains(out, natsChartRepository) {
		t.Fatalf("helm dependency build: %v, not about fetching from %s:\n%s", err, natsChartRepository, out)
	}
}
