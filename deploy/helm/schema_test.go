package helm_test

import (
	"strings"
	"testing"
)

// TestChart_SchemaRefusesWrongValues: values.schema.json makes helm refuse
// a value of the wrong type, outside its enum or unknown, naming it, before
// anything renders; lint refuses it too.
func TestChart_SchemaRefusesWrongValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "metricsPort=metrics"}, "metricsPort"},
		{[]string{"--set", "services.taskqueue.replicas=two"}, "replicas"},
		{[]string{"--set-json", `extraArgs="--lease 90s"`}, "extraArgs"},
		{[]string{"--set", "logLevel=loud"}, "logLevel"},
		{[]string{"--set", "networkPolicy.enabled=yes"}, "enabled"},
		{[]string{"--set-json", `extraEnv=[{"value":"http://collector:4318"}]`}, "name"},
		{[]string{"--set", "metricsPorts=9200"}, "metricsPorts"},
	} {
		args := append([]string{"--set", "publicURL=" + publicURL}, c.args...)
		chart := platformChart(t)
		for _, cmd := range [][]string{{"template", release, chart}, {"lint", "--strict", chart}} {
			out, err := helmResult(t, append(cmd, args...)...)
			if err == nil || !strings.Contains(out, "schema") || !strings.Contains(out, c.want) {
				t.Errorf("helm %s %v: err %v, want a schema error naming %s:\n%s", cmd[0], c.args, err, c.want, out)
			}
		}
	}
}
