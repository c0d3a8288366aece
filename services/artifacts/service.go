// Package artifacts is the artifact service: it owns artifact content and
// metadata, and it alone opens the artifact object store. A runtime (on
// NATS itself, or through the gateway over HTTP) writes an artifact of a
// run it holds through it, in chunks on the bus (upload.go), and so does the
// A2A endpoint with the files a caller gives (input.go); it stores the
// content in the object store, attaches a reference to the run (through the
// task queue, on the bus), and answers metadata queries. Content is read
// through it too, a part at a time (read.go).
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
	"github.com/a2amesh/a2amesh/services/internal/runtimedir"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config configures the service.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// MaxBytes bounds one artifact. Default 25 MiB.
	MaxBytes int64
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
	// Region is the region this copy serves: it keeps the artifacts of the
	// agents homed there, and hands requests about others' to their home.
	Region string
}

// Service is the artifact service.
type Service struct {
	cfg   Config
	meta  *bus.Records[mesh.Artifact]
	marks *bus.Records[struct{}]
	// writes are the runs' write keys (writekey.go).
	writes  *bus.Records[writeRecord]
	objects jetstream.ObjectStore
	// chunks is the object store's stream, which reads get content from,
	// and objectStore the store's name (this region's own).
	chunks      jetstream.Stream
	objectStore string
	// homes says which region keeps each agent's artifacts.
	homes  *homes.Directory
	client *meshapi.Client
	events *bus.Publisher
	svc    *bus.Service
	// runtimes says whether a runtime's credential is still good.
	runtimes *runtimedir.Directory

	mu sync.Mutex
	// uploads are the artifacts being written to this instance, by id.
	uploads  map[string]*upload
	stopping bool
	wg       sync.WaitGroup
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = bus.DefaultMaxArtifactBytes
	}
	return &Service{cfg: cfg, uploads: map[string]*upload{}}
}

// Metadata keys: the artifact under metaKey, and an empty marker under
// runKey so a run's artifacts can be listed by key prefix.
func metaKey(artifactID string) string       { return "a." + artifactID }
func runKey(runID, artifactID string) string { return "r." + runID + "." + artifactID }
func runPrefix(runID string) string          { return "r." + runID + ".*" }

// Start binds to the bus and starts answering.
func (s *Service) Start(ctx context.Context) error {
	js := s.cfg.Conn.JS
	var err error
	if s.meta, err = bus.OpenRecords[mesh.Artifact](ctx, js, bus.BucketArtifactMeta); err != nil {
		return err
	}
	if s.marks, err = bus.OpenRecords[struct{}](ctx, js, bus.BucketArtifactMeta); err != nil {
		return err
	}
	if s.writes, err = bus.OpenRecords[writeRecord](ctx, js, bus.BucketArtifactMeta); err != nil {
		return err
	}
	if s.objectStore, err = bus.OwnBucket(ctx, js, bus.ObjectArtifacts); err != nil {
		return fmt.Errorf("artifacts: object store: %w", err)
	}
	if s.objects, err = js.ObjectStore(ctx, s.objectStore); err != nil {
		return fmt.Errorf("artifacts: object store: %w", err)
	}
	if s.chunks, err = js.Stream(ctx, bus.ObjectStream(s.objectStore)); err != nil {
		return fmt.Errorf("artifacts: object store stream: %w", err)
	}
	if s.homes, err = homes.Open(ctx, js, s.cfg.Region, s.cfg.Logger); err != nil {
		return err
	}
	if s.runtimes, err = runtimedir.Open(ctx, js, runtimedir.Options{Logger: s.cfg.Logger}); err != nil {
		return err
	}
	s.client = meshapi.NewClient(s.cfg.Conn.NC)
	s.events = bus.NewPublisher(js, bus.ServiceArtifacts).OnPublished(metrics.EventsPublished(s.cfg.Metrics, bus.ServiceArtifacts))
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceArtifacts, Description: "task-run artifacts", Logger: s.cfg.Logger,
		Region: s.cfg.Region, Route: s.homes.Routes(s.routeRequest),
		Endpoints: []bus.Endpoint{
			meshapi.OpRuntimeArtifactOpen.Handle(s.handleOpen),
			meshapi.OpArtifactsOpenInput.Handle(s.handleOpenInput),
			meshapi.OpArtifactsGet.Handle(s.handleGet),
			meshapi.OpArtifactsList.Handle(s.handleList),
			meshapi.OpArtifactsRead.Handle(s.handleRead),
		},
	})
	return err
}

// Stop stops answering, waits up to grace for requests in flight, and drops
// the artifacts still being written (their writers get an error).
func (s *Service) Stop(grace time.Duration) {
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	s.mu.Lock()
	s.stopping = true
	uploads := make([]*upload, 0, len(s.uploads))
	for _, u := range s.uploads {
		uploads = append(uploads, u)
	}
	s.mu.Unlock()
	for _, u := range uploads {
		u.drop(mesh.Errorf(mesh.CodeUnavailable, "the artifacts service stopped"))
	}
	s.wg.Wait()
	s.homes.Stop()
	if s.runtimes != nil {
		s.runtimes.Close()
	}
}

// discard removes the content of an artifact whose commit failed: content
// without metadata would never be reachable.
func (s *Service) discard(ctx context.Context, id string) {
	if mesh.ValidID(id) {
		_ = s.objects.Delete(context.WithoutCancel(ctx), id)
	}
}

// commit registers the stored content of an artifact written by a runtime
// and attaches it to the run, which the runtime must still hold; a write
// with a key notes it first (writekey.go).
func (s *Service) commit(ctx context.Context, agentID, runtimeID string, attempt int, in *mesh.Artifact, key string) (*mesh.Artifact, error) {
	a := *in
	size, err := s.storedSize(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	if key != "" {
		if err := s.noteWrite(ctx, a.TaskRunID, key, a.ID); err != nil {
			return nil, err
		}
	}
	a.Size = size
	a.AgentID = agentID
	a.CreatedAt = time.Now().UTC()
	run, err := s.client.AttachArtifact(ctx, meshapi.AttachArtifactRequest{
		TaskRunID: a.TaskRunID, AgentID: agentID, RuntimeID: runtimeID, Attempt: attempt, Artifact: a.Ref(),
	})
	if err != nil {
		return nil, err
	}
	a.ConversationID, a.WorkspaceID = run.ConversationID, run.WorkspaceID
	if _, err := s.meta.Put(ctx, metaKey(a.ID), &a); err != nil {
		return nil, err
	}
	if _, err := s.marks.Put(ctx, runKey(a.TaskRunID, a.ID), &struct{}{}); err != nil {
		return nil, err
	}
	err = s.events.Publish(ctx, bus.Event{
		Type: mesh.EventArtifactCreated, Kind: mesh.KindArtifact, AgentID: a.AgentID, Subject: a.ID,
		ID: a.ID + ".created", Data: a,
	})
	if err != nil {
		s.cfg.Logger.Error().Ctx(ctx).Err(err).Str("artifact_id", a.ID).Msg("artifact event not published")
	}
	return &a, nil
}

// storedSize returns the size of an artifact's stored content, refusing
// content that is missing or over the limit.
func (s *Service) storedSize(ctx context.Context, id string) (int64, error) {
	info, err := s.objects.GetInfo(ctx, id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, mesh.Errorf(mesh.CodeInvalidRequest, "artifact content was not stored")
	}
	if err != nil {
		return 0, fmt.Errorf("artifact info %s: %w", id, err)
	}
	if int64(info.Size) > s.cfg.MaxBytes {
		return 0, mesh.Errorf(mesh.CodePayloadTooLarge, "artifact is larger than %d bytes", s.cfg.MaxBytes)
	}
	return int64(info.Size), nil
}

func (s *Service) handleGet(ctx context.Context, in *meshapi.GetArtifactRequest) (*mesh.Artifact, error) {
	return s.get(ctx, in.ArtifactID)
}

func (s *Service) get(ctx context.Context, id string) (*mesh.Artifact, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "artifact %q not found", id)
	}
	a, _, err := s.meta.Get(ctx, metaKey(id))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "artifact %s not found", id)
	}
	return a, err
}

func (s *Service) handleList(ctx context.Context, in *meshapi.ListArtifactsRequest) (*meshapi.ArtifactList, error) {
	if !mesh.ValidID(in.TaskRunID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %q not found", in.TaskRunID)
	}
	out := meshapi.ArtifactList{Artifacts: []mesh.Artifact{}}
	lister, err := s.meta.KV().ListKeysFiltered(ctx, runPrefix(in.TaskRunID))
	if err != nil {
		return nil, fmt.Errorf("list artifacts of %s: %w", in.TaskRunID, err)
	}
	var ids []string
	for key := range lister.Keys() {
		ids = append(ids, key[strings.LastIndexByte(key, '.')+1:])
	}
	for _, id := range ids {
		a, err := s.get(ctx, id)
		if err != nil {
			continue
		}
		out.Artifacts = append(out.Artifacts, *a)
	}
	sortByID(out.Artifacts)
	return &out, nil
}
