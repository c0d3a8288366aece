package runtimeengine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

// fileHost is an agent host that answers every task with the files it
// was given, calling answering (when set) as it answers.
type fileHost struct {
	files     []adapterapi.ArtifactWrite
	answering func()
}

func (h *fileHost) Name() string { return "files" }

func (h *fileHost) Run(context.Context, *provider.Task, func(provider.Progress)) (*provider.Result, error) {
	if h.answering != nil {
		h.answering()
	}
	return &provider.Result{Output: map[string]any{"text": "wrote the files", "artifacts": h.files}}, nil
}

// startFileHost serves host as a local adapter and returns its client.
func startFileHost(t *testing.T, host *fileHost) *adapterclient.Client {
	t.Helper()
	srv, err := adapter.New(adapter.Config{Provider: host, Workdir: t.TempDir(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

// linkedRuntime is a runtime process reaching the platform through a link
// the test cuts and heals: over NATS, or over HTTP.
type linkedRuntime struct {
	t     *testing.T
	p     *meshtest.Platform
	att   meshtest.Attached
	mode  string
	link  *tcplink.Link
	dir   string
	host  *adapterclient.Client
	logs  *syncbuf.Buffer
	wrap  func(runtimeengine.Transport, runtimeengine.ArtifactWriter) runtimeengine.Transport
	stop  func()
	ledgr *ledger.Ledger
}

func newLinkedRuntime(t *testing.T, p *meshtest.Platform, att meshtest.Attached, mode string, host *adapterclient.Client) *linkedRuntime {
	t.Helper()
	link, err := tcplink.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	target := p.NATSURL()
	if mode == runtimeengine.ModeHTTP {
		target = p.APIBase
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	link.SetTarget(u.Host)
	return &linkedRuntime{t: t, p: p, att: att, mode: mode, link: link, dir: t.TempDir(), host: host, logs: &syncbuf.Buffer{}}
}

// cut has the platform become unreachable: the runtime's connections
// through the link are dropped and new ones refused.
func (r *linkedRuntime) cut() {
	r.link.SetCut(true)
	r.link.DropAll()
}

// start starts a runtime process on the ledger directory, as
// a2a-runtime start does: its ledger, its transport through the link, its
// engine.
func (r *linkedRuntime) start() {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	led, err := ledger.New(r.dir, r.att.AgentID, r.att.RuntimeID, ledger.WithSecrets(r.att.RuntimeToken))
	if err != nil {
		t.Fatal(err)
	}
	api, err := restclient.New("http://"+r.link.Addr(), restclient.WithRuntimeToken(r.att.RuntimeToken))
	if err != nil {
		t.Fatal(err)
	}
	var tr runtimeengine.Transport
	if r.mode == runtimeengine.ModeHTTP {
		tr = runtimeengine.NewHTTP(runtimeengine.HTTPConfig{API: api, AgentID: r.att.AgentID, PullWait: 2 * time.Second})
	} else {
		tr, _ = dialNATS(ctx, t, "nats://"+r.link.Addr(), r.att)
		api = r.p.Runtime(r.att.RuntimeToken)
	}
	writer := tr.Artifacts()
	hello, err := runtimeengine.HTTPHello(ctx, r.p.Runtime(r.att.RuntimeToken))
	if err != nil {
		t.Fatal(err)
	}
	if r.wrap != nil {
		tr = r.wrap(tr, writer)
	}
	engine := runtimeengine.NewRuntime(runtimeengine.RuntimeConfig{
		AgentID: r.att.AgentID, RuntimeID: r.att.RuntimeID, Transport: tr, Hello: hello, API: api, Adapter: r.host,
		Ledger: led, Logger: zerolog.New(r.logs), HeartbeatInterval: time.Second, RenewInterval: time.Second, DrainGrace: 30 * time.Second,
	})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = engine.Run(runCtx) }()
	r.ledgr = led
	r.stop = func() {
		stop()
		<-done
		tr.Close()
		_ = led.Close()
	}
	t.Cleanup(func() {
		if r.stop != nil {
			r.stop()
		}
	})
}

// restart stops the runtime process; the next start is a new one.
func (r *linkedRuntime) halt() {
	r.stop()
	r.stop = nil
}

// waitKept waits until the ledger keeps a completion of run in its outbox.
func (r *linkedRuntime) waitKept(run mesh.TaskRun) ledger.Report {
	t := r.t
	t.Helper()
	var kept ledger.Report
	meshtest.Eventually(t, 30*time.Second, func() bool {
		pending, err := r.ledgr.Pending()
		if err != nil {
			t.Fatal(err)
		}
		for _, rep := range pending {
			if rep.TaskRunID == run.ID {
				kept = rep
				return true
			}
		}
		return false
	}, func() string { return "the completion was never kept in the outbox; logs:\n" + r.logs.String() })
	if kept.Kind != ledger.ReportComplete {
		t.Fatalf("the outbox keeps a %s report of the run, want complete", kept.Kind)
	}
	return kept
}

// lostAnswer is a transport whose first write of the artifact named lose
// reaches the platform, which stores it, but whose answer does not come
// back: the platform becomes unreachable at that moment, so the runtime
// learns only that it is gone.
type lostAnswer struct {
	runtimeengine.Transport
	writer runtimeengine.ArtifactWriter
	r      *linkedRuntime
	lose   string
	once   sync.Once
}

// Artifacts is l: the runtime writes its artifacts through Write.
func (l *lostAnswer) Artifacts() runtimeengine.ArtifactWriter { return l }

func (l *lostAnswer) Write(ctx context.Context, runID string, attempt int, a runtimeengine.ArtifactContent) (map[string]any, error) {
	lost := false
	if a.Write.Filename == l.lose {
		l.once.Do(func() { lost = true })
	}
	if lost {
		if _, err := l.writer.Write(ctx, runID, attempt, a); err != nil {
			return nil, err
		}
		l.r.cut()
	}
	return l.writer.Write(ctx, runID, attempt, a)
}

// artifactContents is what the platform keeps of a run's artifacts: each
// one's content by file name, and how many of each name there are.
func artifactContents(t *testing.T, p *meshtest.Platform, run mesh.TaskRun) (map[string]string, map[string]int) {
	t.Helper()
	contents, counts := map[string]string{}, map[string]int{}
	for _, a := range run.Artifacts {
		counts[a.Filename]++
		body := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + a.ArtifactID + "/content", Owner: true}).Expect(t, http.StatusOK).Body
		contents[a.Filename] = string(body)
	}
	return contents, counts
}

// TestOutbox_ACompletionKeptWithItsArtifactsIsDeliveredByTheNextRuntimeProcess:
// the adapter answers with three files; the first is stored, the platform
// stores the second but its answer never comes back (the platform went
// away), the third it cannot take. The run's slot is freed at once: the
// completion is kept in the outbox with the files not yet known stored,
// and the runtime stops. A runtime process started later on the same
// ledger, with the platform back, stores what is left and completes the
// run: each file once (the second is not stored twice), its content intact,
// and the output refers to each; nothing of the kept files is left beside
// the ledger. The same over NATS and over HTTP.
func TestOutbox_ACompletionKeptWithItsArtifactsIsDeliveredByTheNextRuntimeProcess(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	files := []adapterapi.ArtifactWrite{
		{Filename: "a.txt", ContentText: "first file"},
		{Filename: "b.bin", ContentBase64: "AAECAwQF/w=="},
		{Filename: "c.md", ContentText: "# third file\n" + strings.Repeat("line\n", 1000)},
	}
	for _, mode := range []string{runtimeengine.ModeNATS, runtimeengine.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			agent := p.CreateAgent("files over " + mode)
			att := p.OnlineRuntime(t, agent.ID)
			r := newLinkedRuntime(t, p, att, mode, startFileHost(t, &fileHost{files: files}))
			r.wrap = func(tr runtimeengine.Transport, w runtimeengine.ArtifactWriter) runtimeengine.Transport {
				return &lostAnswer{Transport: tr, writer: w, r: r, lose: "b.bin"}
			}
			r.start()
			run := p.CreateTask(agent.ID, "write three files")
			r.waitKept(run)
			r.halt()

			if got := p.GetTask(run.ID); got.Status != mesh.StatusRunning {
				t.Fatalf("while the platform was away the run became %s (%+v), want still running", got.Status, got.Error)
			}
			r.link.SetCut(false)
			r.wrap = nil
			r.start()
			done := p.WaitTask(run.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed, mesh.StatusCanceled))
			if done.Status != mesh.StatusCompleted {
				t.Fatalf("the run is %s (%+v), want completed; logs:\n%s", done.Status, done.Error, r.logs.String())
			}
			contents, counts := artifactContents(t, p, done)
			for _, f := range []string{"a.txt", "b.bin", "c.md"} {
				if counts[f] != 1 {
					t.Errorf("the run has %d artifacts named %s, want 1 (all: %+v)", counts[f], f, done.Artifacts)
				}
			}
			want := map[string]string{"a.txt": "first file", "b.bin": "\x00\x01\x02\x03\x04\x05\xff", "c.md": files[2].ContentText}
			for name, body := range want {
				if contents[name] != body {
					t.Errorf("artifact %s holds %q, want %q", name, contents[name], body)
				}
			}
			var out struct {
				Parts []struct {
					Type       string `json:"type"`
					ArtifactID string `json:"artifact_id"`
				} `json:"parts"`
			}
			if err := json.Unmarshal(done.Output, &out); err != nil {
				t.Fatal(err)
			}
			var refs []string
			for _, part := range out.Parts {
				if part.Type == "artifact_ref" {
					refs = append(refs, part.ArtifactID)
				}
			}
			var stored []string
			for _, a := range done.Artifacts {
				stored = append(stored, a.ArtifactID)
			}
			if !slices.Equal(refs, stored) {
				t.Errorf("the output refers to %v, the run's artifacts are %v", refs, stored)
			}
			if strings.Contains(string(done.Output), "third file") {
				t.Errorf("the output carries a file's content: %s", done.Output)
			}
			meshtest.Eventually(t, 10*time.Second, func() bool {
				pending, err := r.ledgr.Pending()
				return err == nil && len(pending) == 0
			}, func() string { return "the delivered completion is still in the outbox" })
			r.halt()
			if left := keptFiles(t, r.dir); len(left) > 0 {
				t.Errorf("files kept for the outbox are left beside the ledger: %v", left)
			}
		})
	}
}

// TestOutbox_AKeptArtifactThePlatformRefusesFailsTheRun: the platform is
// away as the adapter answers, so its files are kept with the completion;
// once it is back, it refuses one of them (over its size limit): the run
// fails with ARTIFACT_WRITE_FAILED naming it, as it does when the refusal
// comes at the first try.
func TestOutbox_AKeptArtifactThePlatformRefusesFailsTheRun(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.Lease = time.Minute
		c.HeartbeatTimeout = time.Minute
		c.MaxArtifactBytes = 1024
	})
	for _, mode := range []string{runtimeengine.ModeNATS, runtimeengine.ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			agent := p.CreateAgent("too large over " + mode)
			att := p.OnlineRuntime(t, agent.ID)
			host := &fileHost{files: []adapterapi.ArtifactWrite{
				{Filename: "small.txt", ContentText: "fits"},
				{Filename: "big.txt", ContentText: strings.Repeat("x", 4096)},
			}}
			r := newLinkedRuntime(t, p, att, mode, startFileHost(t, host))
			host.answering = r.cut
			r.start()
			run := p.CreateTask(agent.ID, "write a file too large")
			r.waitKept(run)
			r.link.SetCut(false)
			done := p.WaitTask(run.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed, mesh.StatusCanceled))
			if done.Status != mesh.StatusFailed || done.Error == nil || done.Error.Code != mesh.ReasonArtifactWriteFailed || !strings.Contains(done.Error.Message, "big.txt") {
				t.Fatalf("the run is %s (%+v), want failed with %s naming big.txt", done.Status, done.Error, mesh.ReasonArtifactWriteFailed)
			}
			meshtest.Eventually(t, 10*time.Second, func() bool {
				pending, err := r.ledgr.Pending()
				return err == nil && len(pending) == 0
			}, func() string { return "the refused completion is still in the outbox" })
			r.halt()
			if left := keptFiles(t, r.dir); len(left) > 0 {
				t.Errorf("files kept for the outbox are left beside the ledger: %v", left)
			}
		})
	}
}

// keptFiles lists the files under dir other than the ledger itself.
func keptFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != ledger.FileName {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
