// Package artifacts is the artifact service: it owns artifact content and
// metadata. A runtime (on NATS itself, or through the gateway over HTTP)
// writes an artifact of a run it holds through it, in chunks on the bus
// (upload.go); it stores the content in the artifact object store, attaches
// a reference to the run (through the task queue, on the bus), and answers
// metadata queries. Content is read straight from the object store.
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
}

// Service is the artifact service.
type Service struct {
	cfg     Config
	meta    *bus.Records[mesh.Artifact]
	marks   *bus.Records[struct{}]
	objects jetstream.ObjectStore
	client  *meshapi.Client
	events  *bus.Publisher
	svc     *bus.Service
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
	if s.objects, err = js.ObjectStore(ctx, bus.ObjectArtifacts); err != nil {
		return fmt.Errorf("artifacts: object store: %w", err)
	}
	if s.runtimes, err = runtimedir.Open(ctx, js, runtimedir.Options{Logger: s.cfg.Logger}); err != nil {
		return err
	}
	s.client = meshapi.NewClient(s.cfg.Conn.NC)
	s.events = bus.NewPublisher(js, bus.ServiceArtifacts).OnPublished(metrics.EventsPublished(s.cfg.Metrics, bus.ServiceArtifacts))
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceArtifacts, Description: "task-run artifacts", Logger: s.cfg.Logger,
		Ops: map[string]bus.HandlerFunc{
			meshapi.OpArtifactCommitInput: s.handleCommitInput,
			meshapi.OpArtifactGet:         s.handleGet,
			meshapi.OpArtifactList:        s.handleList,
		},
		RuntimeOps: map[string]bus.HandlerFunc{
			bus.RuntimeOpArtifactOpen: s.handleOpen,
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
// and attaches it to the run, which the runtime must still hold.
func (s *Service) commit(ctx context.Context, agentID, runtimeID string, attempt int, in *mesh.Artifact) (*mesh.Artifact, error) {
	a := *in
	size, err := s.storedSize(ctx, a.ID)
	if err != nil {
		return nil, err
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
		s.cfg.Logger.Error().Err(err).Str("artifact_id", a.ID).Msg("artifact event not published")
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

func (s *Service) handleCommitInput(ctx context.Context, req *bus.Request) (any, error) {
	var in meshapi.CommitInputRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	a, err := s.commitInput(ctx, &in)
	if err != nil {
		s.discard(ctx, in.Artifact.ID)
		return nil, err
	}
	return a, nil
}

// commitInput registers a file given to an agent with a conversation's input
// (an A2A file part). It belongs to the conversation and its target agent,
// not to a run: the run that reads it is created after it, with its id in
// input.attachments. It is not announced as artifact.created, which tells
// of a run's outputs.
func (s *Service) commitInput(ctx context.Context, in *meshapi.CommitInputRequest) (*mesh.Artifact, error) {
	a := in.Artifact
	if !mesh.ValidID(a.ID) || !mesh.ValidID(in.AgentID) || !mesh.ValidID(in.ConversationID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "artifact_id, agent_id and conversation_id are required")
	}
	name, err := mesh.NormalizeFilename(a.Filename)
	if err != nil {
		return nil, err
	}
	conv, err := s.client.GetConversation(ctx, in.ConversationID)
	if err != nil {
		return nil, err
	}
	size, err := s.storedSize(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	a.Filename = name
	a.TaskRunID = ""
	a.Role = mesh.ArtifactRoleInput
	a.Size = size
	a.AgentID = in.AgentID
	a.ConversationID, a.WorkspaceID = conv.ID, conv.WorkspaceID
	a.CreatedAt = time.Now().UTC()
	if _, err := s.meta.Create(ctx, metaKey(a.ID), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

func (s *Service) handleGet(ctx context.Context, req *bus.Request) (any, error) {
	var in meshapi.GetArtifactRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
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

func (s *Service) handleList(ctx context.Context, req *bus.Request) (any, error) {
	var in meshapi.ListArtifactsRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
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
	return out, nil
}
