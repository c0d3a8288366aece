package helm_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"
	"sigs.k8s.io/yaml"
)

// subchartValues reads the chart's nats values, which the official NATS
// chart gets.
func subchartValues(t *testing.T) natsValues {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		NATS natsValues `json:"nats"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	return v.NATS
}

// natsValues is the part of the chart's nats values (the official NATS
// chart's, for the NATS it installs with the release) that chart turns
// into server settings.
type natsValues struct {
	Config struct {
		Cluster struct {
			Enabled  bool `json:"enabled"`
			Replicas int  `json:"replicas"`
		} `json:"cluster"`
		JetStream struct {
			Enabled bool           `json:"enabled"`
			Merge   map[string]any `json:"merge"`
		} `json:"jetstream"`
		WebSocket struct {
			Enabled bool `json:"enabled"`
		} `json:"websocket"`
		LeafNodes struct {
			Enabled bool `json:"enabled"`
		} `json:"leafnodes"`
		Monitor struct {
			Enabled bool `json:"enabled"`
		} `json:"monitor"`
		Merge map[string]any `json:"merge"`
	} `json:"config"`
	Container struct {
		Image struct {
			Tag string `json:"tag"`
		} `json:"image"`
		Env map[string]struct {
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"secretKeyRef"`
			} `json:"valueFrom"`
		} `json:"env"`
	} `json:"container"`
}

// formatConfig writes a map as the official chart writes nats.conf
// (nats.formatConfig in its _helpers.tpl): JSON without HTML escapes,
// "<< x >>" strings unquoted, "…$include" keys as include directives.
func formatConfig(t *testing.T, m map[string]any) string {
	t.Helper()
	s := regexp.MustCompile(`".*\$include": "(.*)",?`).ReplaceAllString(prettyJSON(t, m), "include ${1};")
	return regexp.MustCompile(`"<<\s+(.*?)\s+>>"`).ReplaceAllString(s, "${1}")
}

// prettyJSON is sprig's toPrettyJson with the chart's unescaping of <, >, &.
func prettyJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The environment the shipped NATS configurations read (deploy/nats).
var natsEnv = map[string]string{
	"MESH_SERVICE_PASSWORD":    "service-password",
	"MESH_AUTH_ISSUER":         "ABJHLOVMPA4CI6R5KLNGOB4GSLNIY7IOUPAJC4YFNDLQVIOBYQGUWVLA",
	"MESH_NODE_NAME":           "n1",
	"MESH_NATS_LISTEN":         "0.0.0.0:4222",
	"MESH_NATS_MONITOR":        "0.0.0.0:8222",
	"MESH_NATS_STORE":          "/data",
	"MESH_NATS_CLUSTER_LISTEN": "0.0.0.0:6222",
	"MESH_NATS_ROUTE_1":        "nats://n1:6222",
	"MESH_NATS_ROUTE_2":        "nats://n2:6222",
	"MESH_NATS_ROUTE_3":        "nats://n3:6222",
	"MESH_NATS_WS_LISTEN":      "0.0.0.0:8080",
	"MESH_NATS_LEAF_LISTEN":    "0.0.0.0:7422",
}

// TestNATSValues_RunTheShippedClusterConfiguration: the values for the
// official NATS chart give its servers every setting of
// deploy/nats/cluster.conf (and so the accounts and auth callout of
// accounts.conf, which bus keeps equal to what `up` runs): a setting added
// there and not here fails. Both are parsed with the NATS server's own
// parser, the values as the chart writes them into nats.conf.
func TestNATSValues_RunTheShippedClusterConfiguration(t *testing.T) {
	for k, v := range natsEnv {
		t.Setenv(k, v) // not parallel: the parser reads $NAME from the environment
	}
	want, err := conf.ParseFile(filepath.Join("..", "nats", "cluster.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/cluster.conf: %v", err)
	}
	nv := subchartValues(t)
	c := nv.Config
	merged := map[string]any{}
	for k, v := range c.Merge {
		merged[k] = v
	}
	merged["jetstream"] = c.JetStream.Merge
	text := formatConfig(t, merged)
	got, err := conf.Parse(text)
	if err != nil {
		t.Fatalf("nats.conf from the nats values does not parse: %v\n%s", err, text)
	}

	for key, w := range want {
		switch key {
		case "server_name", "listen":
			// The chart names each server after its pod and listens on 4222.
		case "http":
			if !c.Monitor.Enabled {
				t.Error("cluster.conf serves monitoring (http); config.monitor.enabled is off")
			}
		case "cluster":
			routes, _ := w.(map[string]any)["routes"].([]any)
			if !c.Cluster.Enabled || c.Cluster.Replicas != len(routes) {
				t.Errorf("cluster.conf has %d nodes; config.cluster enabled %v with %d replicas", len(routes), c.Cluster.Enabled, c.Cluster.Replicas)
			}
		case "websocket":
			if !c.WebSocket.Enabled {
				t.Error("cluster.conf serves WebSocket; config.websocket.enabled is off")
			}
		case "leafnodes":
			if !c.LeafNodes.Enabled {
				t.Error("cluster.conf takes leaf nodes; config.leafnodes.enabled is off")
			}
		case "jetstream":
			if !c.JetStream.Enabled {
				t.Error("cluster.conf runs JetStream; config.jetstream.enabled is off")
			}
			wj := w.(map[string]any)
			delete(wj, "store_dir") // the chart's PVC
			if !reflect.DeepEqual(got["jetstream"], wj) {
				t.Errorf("jetstream: cluster.conf has %v, the nats values give %v", wj, got["jetstream"])
			}
		default:
			if !reflect.DeepEqual(got[key], w) {
				t.Errorf("%s: cluster.conf (with accounts.conf) has\n%v\nthe nats values give\n%v", key, w, got[key])
			}
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("the nats values set %s, which deploy/nats/cluster.conf does not", key)
		}
	}
}

// TestNATSValues_ServerSecretsComeFromThePlatformsSecret: every variable the
// servers' configuration reads comes from a secretKeyRef of the Secret the
// a2a-mesh chart uses, the services' password from the very key the
// services read; the server image is the release go.mod builds with.
func TestNATSValues_ServerSecretsComeFromThePlatformsSecret(t *testing.T) {
	t.Parallel()
	nv := subchartValues(t)
	chart := readValues(t, filepath.Join(chartDir, "values.yaml"))
	// The variables: "<< $NAME >>" values, which the chart writes unquoted.
	vars := regexp.MustCompile(`"<<\s+\$([A-Za-z_][A-Za-z0-9_]*)\s+>>"`).FindAllStringSubmatch(prettyJSON(t, nv.Config.Merge), -1)
	if len(vars) == 0 {
		t.Fatal("the nats values read no secret from the environment: the password and issuer would be in the file")
	}
	for _, m := range vars {
		name := m[1]
		env, ok := nv.Container.Env[name]
		if !ok || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
			t.Errorf("the servers read $%s, which container.env does not take from a Secret", name)
			continue
		}
		ref := env.ValueFrom.SecretKeyRef
		if ref.Name != chart.Secret.Name || ref.Key == "" {
			t.Errorf("$%s comes from %s/%s, want a key of the chart's Secret %s", name, ref.Name, ref.Key, chart.Secret.Name)
		}
		if name == "MESH_SERVICE_PASSWORD" && ref.Key != chart.Secret.Keys.NATSPassword {
			t.Errorf("the servers' service password is key %s, the services read key %s", ref.Key, chart.Secret.Keys.NATSPassword)
		}
	}

	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	v := regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 v(\S+)`).FindSubmatch(mod)
	if v == nil {
		t.Fatal("go.mod does not require nats-server")
	}
	if want := string(v[1]) + "-alpine"; nv.Container.Image.Tag != want {
		t.Errorf("the NATS image is %s, want %s (the server go.mod builds and tests with)", nv.Container.Image.Tag, want)
	}
}
