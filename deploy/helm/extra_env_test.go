package helm_test

import (
	"path/filepath"
	"testing"

	"github.com/a2amesh/a2amesh/internal/platform"
	corev1 "k8s.io/api/core/v1"
)

// TestChart_ExtraEnvReachesEveryContainer: the variables of extraEnv, plain
// values and valueFrom alike, are set on every service's container, so one
// values file turns tracing on everywhere; without it no such variable is set.
func TestChart_ExtraEnvReachesEveryContainer(t *testing.T) {
	t.Parallel()
	on := render(t, "-f", filepath.Join("testdata", "tracing-values.yaml"))
	off := render(t, "--set", "publicURL="+publicURL)
	for _, svc := range platform.Services {
		env := envOf(onlyContainer(t, deploymentOf(t, on, svc)))
		if e, ok := env["OTEL_EXPORTER_OTLP_ENDPOINT"]; !ok || e.Value != "http://otel-collector.observability:4317" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT is %+v, want the collector's URL", svc, e)
		}
		if e, ok := env["OTEL_RESOURCE_ATTRIBUTES_POD_NAME"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Errorf("%s: OTEL_RESOURCE_ATTRIBUTES_POD_NAME is %+v, want the pod's name from its fields", svc, e)
		}
		if _, ok := env["A2A_MESH_NATS_PASSWORD"]; !ok {
			t.Errorf("%s: extraEnv replaced the chart's own variables", svc)
		}
		if _, ok := envOf(onlyContainer(t, deploymentOf(t, off, svc)))["OTEL_EXPORTER_OTLP_ENDPOINT"]; ok {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT set without extraEnv", svc)
		}
	}
}

// envOf is a container's environment by name.
func envOf(ctr *corev1.Container) map[string]corev1.EnvVar {
	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		env[e.Name] = e
	}
	return env
}
