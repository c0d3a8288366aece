package docker_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

var labelPair = regexp.MustCompile(`([A-Za-z0-9._-]+)=(?:"([^"]*)"|(\S+))`)

// labels are the image's LABELs, key to value as written.
func (s *stage) labels() map[string]string {
	out := map[string]string{}
	for _, in := range s.all("LABEL") {
		for _, m := range labelPair.FindAllStringSubmatch(in.args, -1) {
			out[m[1]] = m[2] + m[3]
		}
	}
	return out
}

// args are the names of the stage's ARGs.
func (s *stage) args() []string {
	var out []string
	for _, in := range s.all("ARG") {
		name, _, _ := strings.Cut(in.args, "=")
		out = append(out, name)
	}
	return out
}

// TestDockerfile_ImageCarriesTheOpenContainersLabels: the image names its
// title, description, source, licences and the VERSION it was built with,
// under the org.opencontainers.image annotations registries show.
func TestDockerfile_ImageCarriesTheOpenContainersLabels(t *testing.T) {
	t.Parallel()
	img := parseDockerfile(t).final()
	labels := img.labels()
	for _, key := range []string{"title", "description", "source", "version", "licenses"} {
		if strings.TrimSpace(labels["org.opencontainers.image."+key]) == "" {
			t.Errorf("the image has no org.opencontainers.image.%s label (labels: %v)", key, labels)
		}
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := strings.Fields(strings.SplitN(string(mod), "\n", 2)[0])[1]
	if want := "https://" + module; labels["org.opencontainers.image.source"] != want {
		t.Errorf("org.opencontainers.image.source is %q, want %q (go.mod's module)", labels["org.opencontainers.image.source"], want)
	}
	version := labels["org.opencontainers.image.version"]
	if version != "$VERSION" && version != "${VERSION}" {
		t.Errorf("org.opencontainers.image.version is %q, want the VERSION build argument", version)
	}
	if !slices.Contains(img.args(), "VERSION") {
		t.Error("the image's stage declares no ARG VERSION: its version label would be empty")
	}
}

// TestDockerfile_HealthcheckRunsThePlatformsOwnCheck: the image's
// HEALTHCHECK needs no shell or curl (distroless has neither): it runs the
// a2a-platform the image holds, which exits 0 against a running platform
// and 1 against none, and by default asks the port the image exposes.
func TestDockerfile_HealthcheckRunsThePlatformsOwnCheck(t *testing.T) {
	t.Parallel()
	img := parseDockerfile(t).final()
	checks := img.all("HEALTHCHECK")
	if len(checks) != 1 {
		t.Fatalf("the image has %d HEALTHCHECKs, want 1", len(checks))
	}
	_, command, ok := strings.Cut(checks[0].args, "CMD ")
	if !ok {
		t.Fatalf("Dockerfile:%d: HEALTHCHECK without CMD: %s", checks[0].line, checks[0].args)
	}
	var argv []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(command)), &argv); err != nil || len(argv) < 2 {
		t.Fatalf("Dockerfile:%d: HEALTHCHECK CMD %s is not the exec form (the image has no shell): %v", checks[0].line, command, err)
	}
	entry := img.all("ENTRYPOINT")
	if len(entry) != 1 || !strings.Contains(entry[0].args, `"`+argv[0]+`"`) || argv[1] != "healthcheck" {
		t.Fatalf("HEALTHCHECK runs %v, want the image's a2a-platform (ENTRYPOINT %v) healthcheck", argv, entry)
	}
	if flag(checks[0], "timeout") == "" || flag(checks[0], "start-period") == "" {
		t.Errorf("Dockerfile:%d: HEALTHCHECK names no --timeout or --start-period", checks[0].line)
	}

	bin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	check := func(env ...string) (int, string) {
		cmd := exec.Command(bin, argv[1:]...)
		cmd.Env = append([]string{"HOME=" + t.TempDir()}, env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	p := meshtest.StartPlatform(t)
	if code, out := check("A2A_MESH_URL=" + p.APIBase + "/healthz"); code != 0 {
		t.Fatalf("the HEALTHCHECK against a running platform exited %d: %s", code, out)
	}
	if code, out := check("A2A_MESH_URL=http://" + meshtest.FreeAddr(t) + "/healthz"); code != 1 {
		t.Fatalf("the HEALTHCHECK against no platform exited %d, want 1: %s", code, out)
	}
	help, err := exec.Command(bin, "healthcheck", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("healthcheck --help: %v\n%s", err, help)
	}
	exposed := strings.Fields(img.all("EXPOSE")[0].args)
	if !regexp.MustCompile(`http://127\.0\.0\.1:(` + strings.Join(exposed, "|") + `)/healthz`).Match(help) {
		t.Errorf("healthcheck's default URL is not /healthz on a port the image exposes (%v):\n%s", exposed, help)
	}
}
