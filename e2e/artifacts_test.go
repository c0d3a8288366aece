package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Seed 000 "Artifact Write Requests": files the host writes to
// $A2A_OUTPUT_DIR, text and binary, are stored on the platform by the
// runtime; the completed output refers to them with artifact_ref parts and
// carries no file body. A runtime on NATS writes them to the artifacts
// service on the bus (the gateway sees no upload), an HTTP runtime through
// the gateway; either way they are readable over REST and A2A.
func TestArtifacts_HostOutputFilesAreMaterialisedOnThePlatform(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		hostOutputFilesAreMaterialised(t, l, transport)
	})
}

func hostOutputFilesAreMaterialised(t *testing.T, l *lab, transport string) {
	p := l.startPlatform(platformOptions{})
	dir := t.TempDir()
	report := "# Result\n\nAll green.\n"
	binary := []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0x00, 0x01, 0xfe, 0xff, 0x80}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), binary, 0o600); err != nil {
		t.Fatal(err)
	}
	host := script(t, `
mkdir -p "$A2A_OUTPUT_DIR/reports"
cp '`+dir+`/report.md' "$A2A_OUTPUT_DIR/reports/result.md"
cp '`+dir+`/chart.png' "$A2A_OUTPUT_DIR/chart.png"
echo "two files written"
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint, "--transport", transport)
	run := waitEnded(t, p.Platform, c.task("make the report").ID, mesh.StatusCompleted, waitStart)
	uploads := strings.Count(p.proc.output(), `"path":"/task-runs/`+run.ID+`/artifacts"`)
	if want := map[string]int{"nats": 0, "http": 2}[transport]; uploads != want {
		t.Errorf("the gateway saw %d artifact uploads over HTTP from a runtime on %s, want %d", uploads, transport, want)
	}

	var list struct {
		Artifacts []mesh.Artifact `json:"artifacts"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + run.ID + "/artifacts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	want := map[string][]byte{"reports/result.md": []byte(report), "chart.png": binary}
	if len(list.Artifacts) != len(want) {
		t.Fatalf("%d artifacts stored, want %d: %+v", len(list.Artifacts), len(want), list.Artifacts)
	}
	ids := map[string]string{}
	for _, a := range list.Artifacts {
		content, ok := want[a.Filename]
		if !ok {
			t.Errorf("unexpected artifact %q", a.Filename)
			continue
		}
		ids[a.ID] = a.Filename
		got := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + a.ID + "/content", Owner: true}).Expect(t, http.StatusOK).Body
		if !bytes.Equal(got, content) {
			t.Errorf("artifact %s content %q, want %q", a.Filename, got, content)
		}
		if a.TaskRunID != run.ID || a.Size != int64(len(content)) {
			t.Errorf("artifact %s: task run %s size %d", a.Filename, a.TaskRunID, a.Size)
		}
	}
	if len(run.Artifacts) != len(want) {
		t.Errorf("the run lists %d artifacts, want %d", len(run.Artifacts), len(want))
	}

	out := outputOf(t, run)
	if out["text"] != "two files written" {
		t.Errorf("output.text = %v", out["text"])
	}
	parts, _ := out["parts"].([]any)
	var refs []string
	for _, part := range parts {
		m, _ := part.(map[string]any)
		if m["type"] == "artifact_ref" {
			refs = append(refs, ids[m["artifact_id"].(string)])
		}
	}
	slices.Sort(refs)
	if !slices.Equal(refs, []string{"chart.png", "reports/result.md"}) {
		t.Errorf("output.parts artifact_refs name %v, want both stored artifacts; parts %v", refs, parts)
	}
	raw := string(rawTask(t, p.Platform, run.ID))
	for _, field := range []string{"content_text", "content_base64", `"artifacts":[{"artifact_type"`, "artifact_writes", "All green"} {
		if strings.Contains(string(run.Output), field) {
			t.Errorf("the stored output still carries %q: %s", field, run.Output)
		}
	}
	if strings.Contains(raw, "content_text") {
		t.Errorf("the stored run carries content_text: %s", raw)
	}
	if ledger := meshtest.ReadFile(c.m.ledgerPath(c.AgentID)); strings.Count(ledger, `"artifact_written"`) != 2 {
		t.Errorf("the ledger does not record both artifacts:\n%s", ledger)
	}

	// Over A2A: the task's file artifacts link to their content.
	files := a2aFiles(t, p.Platform, c.AgentID, run.ID)
	if len(files) != len(want) {
		t.Fatalf("A2A tells %d files, want %d: %v", len(files), len(want), files)
	}
	for name, uri := range files {
		req, _ := http.NewRequest(http.MethodGet, uri, nil)
		req.Header.Set("Authorization", "Bearer "+p.OwnerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want[name]) {
			t.Errorf("A2A file %s: HTTP %d, %q", name, resp.StatusCode, got)
		}
	}
}

// a2aFiles reads a task over A2A (JSON-RPC, tasks/get) and returns its file
// artifacts' links by file name.
func a2aFiles(t *testing.T, p *meshtest.Platform, agentID, taskID string) map[string]string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{"id": taskID}})
	req, _ := http.NewRequest(http.MethodPost, p.APIBase+"/a2a/"+agentID, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.OwnerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Artifacts []struct {
				Parts []struct {
					Kind string `json:"kind"`
					File struct {
						Name string `json:"name"`
						URI  string `json:"uri"`
					} `json:"file"`
				} `json:"parts"`
			} `json:"artifacts"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("tasks/get: %v", err)
	}
	files := map[string]string{}
	for _, a := range out.Result.Artifacts {
		for _, part := range a.Parts {
			if part.Kind == "file" {
				files[part.File.Name] = part.File.URI
			}
		}
	}
	return files
}

// Seed 000 step 6: an artifact the platform refuses (here: too large) fails
// the run with ARTIFACT_WRITE_FAILED; it is never completed.
func TestArtifacts_RefusedArtifactFailsRunWithArtifactWriteFailed(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{maxArtifactBytes: 1024})
	host := script(t, `
head -c 4096 /dev/zero | tr '\0' 'x' > "$A2A_OUTPUT_DIR/big.txt"
echo "small summary"
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	run := waitEnded(t, p.Platform, c.task("too big").ID, mesh.StatusFailed, waitStart)
	wantError(t, run, "ARTIFACT_WRITE_FAILED", "big.txt")
	if len(run.Artifacts) != 0 {
		t.Errorf("a refused artifact is listed on the run: %+v", run.Artifacts)
	}
	evs := events(t, p.Platform, nil)
	if n := countEvents(evs, mesh.EventTaskRunCompleted, run.ID); n != 0 {
		t.Errorf("the run was completed %d times before it failed", n)
	}
	failed := c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == run.ID && e.Event == "task_failed" })
	if failed.ErrorCode != "ARTIFACT_WRITE_FAILED" {
		t.Errorf("ledger task_failed code %q", failed.ErrorCode)
	}
	if got := ledgerEvents(c.m.ledger(c.AgentID), run.ID); slices.Contains(got, "task_completed") {
		t.Errorf("the ledger records the run completed: %v", got)
	}
	if strings.Contains(string(run.Output), "xxxxxxxx") {
		t.Errorf("the failed output carries the file body")
	}
}
