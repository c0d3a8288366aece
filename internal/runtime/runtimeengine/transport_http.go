package runtimeengine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/rs/zerolog"
)

// HTTPConfig configures the HTTP transport (seed 001's REST contract).
type HTTPConfig struct {
	API     *restclient.Client
	AgentID string
	// PullWait is how long one long-poll pull waits. Default 25s.
	PullWait time.Duration
	Logger   zerolog.Logger
}

type httpTransport struct {
	operations
	cfg HTTPConfig
	// natsErr is why the platform's NATS was not used, when it was offered.
	natsErr error
	// canceled are the runs the runtime's event stream said were canceled.
	canceled *canceledRuns
	stop     context.CancelFunc
	// digest is the instructions digest the last pull brought ("": none).
	digest atomic.Pointer[string]
	// lost are the pulls whose answers did not come.
	lost lostClaims
}

// NewHTTP returns the REST transport. It follows the runtime's own event
// stream in the background so cancellations arrive within a second.
func NewHTTP(cfg HTTPConfig) Transport {
	if cfg.PullWait == 0 {
		cfg.PullWait = 25 * time.Second
	}
	ctx, stop := context.WithCancel(context.Background())
	t := &httpTransport{operations: operations{cfg.API}, cfg: cfg, canceled: newCanceledRuns(), stop: stop}
	t.lost = lostClaims{log: cfg.Logger, via: t}
	t.lost.sweep(ctx.Done())
	go t.followCancellations(ctx)
	return t
}

func (t *httpTransport) Name() string { return "http" }

func (t *httpTransport) followCancellations(ctx context.Context) {
	q := url.Values{"type": {mesh.EventTaskRunCanceled}}
	err := t.cfg.API.StreamEvents(ctx, restclient.PathRuntimeEvents, q, func(ev restclient.Event) error {
		var ce struct {
			Subject string `json:"subject"`
		}
		if json.Unmarshal(ev.Data, &ce) == nil && ce.Subject != "" {
			t.canceled.add(ce.Subject)
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		t.cfg.Logger.Warn().Err(err).Msg("cancellation stream ended; cancellations now arrive with lease renewals")
	}
}

// WaitCanceled names those of ids the runtime's event stream said were
// canceled, and any run it said was since the last wait; it waits for
// the stream when none was.
func (t *httpTransport) WaitCanceled(ctx context.Context, ids []string) ([]string, error) {
	return t.canceled.wait(ctx, ids)
}

func (t *httpTransport) Connection() profile.Connection {
	c := profile.Connection{Transport: ModeHTTP, Server: t.cfg.API.Base(), At: time.Now()}
	if t.natsErr != nil {
		c.NATSError = t.natsErr.Error()
	}
	return c
}

// NextUpTo pulls one run: the REST pull claims one at a time.
func (t *httpTransport) NextUpTo(ctx context.Context, _ int) ([]*mesh.TaskRun, error) {
	run, err := t.next(ctx)
	if run == nil {
		return nil, err
	}
	return []*mesh.TaskRun{run}, nil
}

func (t *httpTransport) next(ctx context.Context) (*mesh.TaskRun, error) {
	// A run claimed by a pull whose answer was lost comes first (a pull
	// returns one run: those recovered with it are given back).
	if runs := t.lost.takeUp(ctx, 1); len(runs) > 0 {
		return runs[0], nil
	}
	key, sent := mesh.NewID(), time.Now()
	pctx, done := pullContext(ctx)
	defer done()
	run, err := t.pull(pctx, url.Values{"wait": {t.lost.waitFor(t.cfg.PullWait).String()}, "key": {key}})
	if err != nil {
		if mayHaveClaimed(err) {
			t.lost.add(key, sent)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return run, nil
}

// pull sends one REST pull with q; it returns nil when it claimed nothing.
func (t *httpTransport) pull(ctx context.Context, q url.Values) (*mesh.TaskRun, error) {
	var run mesh.TaskRun
	pull := meshapi.OpRuntimePull.REST
	path, err := pull.PathOf(map[string]string{"agent_id": t.cfg.AgentID})
	if err != nil {
		return nil, err
	}
	status, header, err := t.cfg.API.Exchange(ctx, pull.Method, path, q, nil, &run)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent || run.ID == "" {
		return nil, nil
	}
	digest := header.Get(meshapi.HeaderInstructionsDigest)
	t.digest.Store(&digest)
	return &run, nil
}

// askLost asks for the run claimed under key by a pull whose answer did
// not come (see lostClaims).
func (t *httpTransport) askLost(ctx context.Context, key string) ([]*mesh.TaskRun, error) {
	run, err := t.pull(ctx, url.Values{"recover": {"true"}, "key": {key}})
	if run == nil {
		return nil, err
	}
	return []*mesh.TaskRun{run}, nil
}

// Artifacts uploads each artifact to its run's REST route.
func (t *httpTransport) Artifacts() ArtifactWriter { return HTTPArtifacts{API: t.cfg.API} }

// ClaimedInstructions answers known when the last pull said the agent's
// instructions are still those.
func (t *httpTransport) ClaimedInstructions(known string) (string, bool) {
	if d := t.digest.Load(); d != nil && *d != "" && *d == meshapi.InstructionsDigest(known) {
		return known, true
	}
	return "", false
}

// pullContext is the context of one long-poll pull: it ends with ctx only
// while the platform has not started to answer. An answer carrying a run
// means the run is claimed for this runtime; cutting it off half-read would
// leave the run claimed by nobody until its lease ran out, so it is read to
// the end and the caller, stopping, releases the run. done releases it.
func pullContext(ctx context.Context) (pctx context.Context, done func()) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	answered := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !answered {
			cancel()
		}
	})
	traced := httptrace.WithClientTrace(pctx, &httptrace.ClientTrace{
		GotFirstResponseByte: func() {
			mu.Lock()
			defer mu.Unlock()
			answered = pctx.Err() == nil
		},
	})
	return traced, func() { stop(); cancel() }
}

// Renew renews each run's lease on its own: the REST renewal renews one.
// A renewal that fails for a reason that says nothing of who holds the run
// (the platform unavailable for a moment) does not keep the runs after it
// from being renewed: the first such failure is returned once all were
// tried, and the engine tries again soon.
func (t *httpTransport) Renew(ctx context.Context, ids []string) ([]string, error) {
	renew := meshapi.OpRuntimeRenew.REST
	var lost []string
	var failed error
	for _, id := range ids {
		path, err := renew.PathOf(map[string]string{"task_run_id": id})
		if err != nil {
			return lost, err
		}
		_, err = t.cfg.API.Do(ctx, renew.Method, path, nil, map[string]any{}, nil)
		switch {
		case err == nil:
		case isFinalAnswer(err):
			lost = append(lost, id)
		case IsAuthError(err) || ctx.Err() != nil:
			return lost, err
		case failed == nil:
			failed = err
		}
	}
	return lost, failed
}

// Heartbeat names the pulls whose lost answers it no longer asks about
// (see lostClaims.withAbandoned).
func (t *httpTransport) Heartbeat(ctx context.Context, req meshapi.HeartbeatRequest) error {
	return t.operations.Heartbeat(ctx, t.lost.withAbandoned(req))
}

func (t *httpTransport) Close() {
	t.stop()
	// Runs claimed for answers that never came are given back at once,
	// not when their leases end.
	t.lost.giveBackAll()
}
