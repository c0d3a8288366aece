package artifacts

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Writing an artifact: a runtime (or the gateway for an HTTP runtime) opens
// it for a run it holds, sends its content in chunks to the artifact's
// upload subject, which the instance that answered the open listens on, and
// ends it with the metadata. The content streams into the object store as
// it arrives; nothing is stored unless the whole artifact is. An input file
// (input.go) is written the same way on a service subject.

const (
	// chunkBytes is the most content one part carries: well under the NATS
	// server's default payload limit (1 MiB).
	chunkBytes = 256 << 10
	// uploadIdle drops an upload whose next part does not come in time.
	uploadIdle = 30 * time.Second
	// maxUploadsPerRuntime bounds the artifacts one runtime writes at once.
	maxUploadsPerRuntime = 16
	// maxInputUploads bounds the input files an instance receives at once
	// (the A2A endpoint writes those of the messages it takes).
	maxInputUploads = 64
	// maxMetaText bounds each text field of an artifact's metadata.
	maxMetaText = 4096
	// maxKeywords bounds an artifact's keywords.
	maxKeywords = 50
	// finishTimeout bounds storing an ended artifact's metadata and
	// attaching it to its run.
	finishTimeout = 30 * time.Second
)

// upload is an artifact being written to this instance.
type upload struct {
	s                  *Service
	id                 string
	agentID, runtimeID string
	runID              string
	attempt            int
	// key is the write's key, if it has one (writekey.go).
	key string
	// input, for an input file, is the conversation it is given in; nil
	// for a run's artifact.
	input    *mesh.Conversation
	declared int64
	received int64
	meter    *contentMeter
	pw       *io.PipeWriter
	// putDone is closed when the object store write ended, with putErr.
	putDone chan struct{}
	putErr  error
	// settled is closed when the upload was stored or dropped (dropped).
	settled   chan struct{}
	dropped   bool
	sub       *nats.Subscription
	idle      *time.Timer
	cancel    context.CancelFunc
	closeOnce sync.Once
}

func (s *Service) handleOpen(ctx context.Context, in *meshapi.OpenArtifactRequest) (*meshapi.OpenArtifactResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	if in.Size > s.cfg.MaxBytes {
		return nil, tooLarge(in.Size, s.cfg.MaxBytes)
	}
	if !mesh.ValidID(in.TaskRunID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %q not found", in.TaskRunID)
	}
	if err := checkWriteKey(in.WriteKey); err != nil {
		return nil, err
	}
	run, err := s.client.GetTaskRun(ctx, in.TaskRunID)
	if err != nil {
		return nil, err
	}
	// Only the runtime that holds the run now writes its artifacts: the
	// subject says which runtime asks, and the NATS server lets a runtime
	// publish only under its own ids.
	if err := run.CheckHeld(agentID, runtimeID, in.Attempt); err != nil {
		return nil, err
	}
	if in.WriteKey != "" {
		stored, err := s.written(ctx, run, in.WriteKey)
		if err != nil {
			return nil, err
		}
		if stored != nil {
			return &meshapi.OpenArtifactResponse{ArtifactID: stored.ID, ChunkBytes: chunkBytes, MaxBytes: s.cfg.MaxBytes, Artifact: stored}, nil
		}
	}
	u := &upload{id: mesh.NewID(), agentID: agentID, runtimeID: runtimeID, runID: in.TaskRunID, attempt: in.Attempt, key: in.WriteKey, declared: in.Size}
	if err := s.startUpload(u, bus.ArtifactUploadSubject(agentID, runtimeID, u.id)); err != nil {
		return nil, err
	}
	return &meshapi.OpenArtifactResponse{ArtifactID: u.id, ChunkBytes: chunkBytes, MaxBytes: s.cfg.MaxBytes}, nil
}

// tooLarge is the refusal of content over the limit.
func tooLarge(size, limit int64) error {
	return mesh.Errorf(mesh.CodePayloadTooLarge, "artifact content of %d bytes is over the limit of %d bytes", size, limit)
}

// startUpload readies an upload whose id, writer and target are set: its
// object store write, fed as parts arrive, and its subscription on subject.
func (s *Service) startUpload(u *upload, subject string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return mesh.Errorf(mesh.CodeUnavailable, "the artifacts service is stopping")
	}
	if err := s.checkUploadBound(u); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	u.s, u.meter, u.pw, u.cancel = s, newContentMeter(), pw, cancel
	u.putDone, u.settled = make(chan struct{}), make(chan struct{})
	sub, err := s.cfg.Conn.NC.Subscribe(subject, u.onPart)
	if err != nil {
		cancel()
		return fmt.Errorf("artifact upload subscription: %w", err)
	}
	u.sub = sub
	s.uploads[u.id] = u
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// The store writes a chunk per Read: fill each one.
		_, err := s.objects.Put(ctx, jetstream.ObjectMeta{Name: u.id}, fullReader{pr})
		// A writer still sending learns that the store gave up.
		_ = pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		u.putErr = err
		close(u.putDone)
		<-u.settled
		if u.dropped {
			// Content without metadata would never be reachable.
			s.discard(context.Background(), u.id)
		}
	}()
	u.idle = time.AfterFunc(uploadIdle, func() {
		u.drop(mesh.Errorf(mesh.CodeTimeout, "no part of artifact %s came for %s", u.id, uploadIdle))
	})
	return nil
}

// checkUploadBound refuses an upload over the bound of its writer: a
// runtime's artifacts, or this instance's input files. Called with s.mu held.
func (s *Service) checkUploadBound(nu *upload) error {
	n := 0
	for _, u := range s.uploads {
		if (u.input == nil) == (nu.input == nil) && u.runtimeID == nu.runtimeID {
			n++
		}
	}
	switch {
	case nu.input != nil && n >= maxInputUploads:
		return mesh.Errorf(mesh.CodeRateLimited, "at most %d input files are written at once", maxInputUploads)
	case nu.input == nil && n >= maxUploadsPerRuntime:
		return mesh.Errorf(mesh.CodeRateLimited, "a runtime writes at most %d artifacts at once", maxUploadsPerRuntime)
	}
	return nil
}

// onPart handles one part of the upload; parts of one upload arrive one at
// a time (one subscription), in order.
func (u *upload) onPart(m *nats.Msg) {
	u.idle.Reset(uploadIdle)
	reply, err := u.part(m)
	if err != nil {
		u.drop(err)
	}
	_ = bus.Answer(u.s.cfg.Conn.NC, m, reply, err)
}

func (u *upload) part(m *nats.Msg) (*meshapi.ArtifactPartReply, error) {
	offset, err := strconv.ParseInt(m.Header.Get(meshapi.HeaderArtifactOffset), 10, 64)
	if err != nil || offset != u.received {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "artifact %s: part at offset %s, but %d bytes were received: the upload is dropped", u.id, m.Header.Get(meshapi.HeaderArtifactOffset), u.received)
	}
	if m.Header.Get(meshapi.HeaderArtifactEnd) != "" {
		return u.end(m.Data)
	}
	if len(m.Data) > chunkBytes {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "a part carries at most %d bytes", chunkBytes)
	}
	size := u.received + int64(len(m.Data))
	if size > u.s.cfg.MaxBytes {
		return nil, mesh.Errorf(mesh.CodePayloadTooLarge, "artifact content is over the limit of %d bytes (%d bytes so far)", u.s.cfg.MaxBytes, size)
	}
	if u.declared > 0 && size > u.declared {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "artifact content is more than the %d bytes announced", u.declared)
	}
	u.meter.Write(m.Data)
	if _, err := u.pw.Write(m.Data); err != nil {
		return nil, bus.StoreFailed("store artifact "+u.id, err)
	}
	u.received = size
	return &meshapi.ArtifactPartReply{Received: u.received}, nil
}

// end completes the content, stores the metadata and attaches the artifact
// to its run.
func (u *upload) end(body []byte) (*meshapi.ArtifactPartReply, error) {
	var in meshapi.ArtifactEnd
	if err := bus.DecodeStrict(body, &in); err != nil {
		return nil, err
	}
	if in.Attempt != 0 && u.input != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "an input file belongs to no run: attempt must be 0")
	}
	if in.Attempt != 0 {
		if u.attempt != 0 && u.attempt != in.Attempt {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "attempt %d, but the artifact was opened for attempt %d", in.Attempt, u.attempt)
		}
		u.attempt = in.Attempt
	}
	if u.declared > 0 && u.received != u.declared {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "artifact content is %d bytes, not the %d bytes announced", u.received, u.declared)
	}
	_ = u.pw.Close()
	<-u.putDone
	if u.putErr != nil {
		return nil, bus.StoreFailed("store artifact "+u.id, u.putErr)
	}
	a, err := describe(&in.Artifact, u.meter)
	if err != nil {
		return nil, err
	}
	a.ID = u.id
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	var stored *mesh.Artifact
	if u.input != nil {
		stored, err = u.s.commitInput(ctx, u.agentID, u.input, a)
	} else {
		a.TaskRunID = u.runID
		stored, err = u.s.commit(ctx, u.agentID, u.runtimeID, u.attempt, a, u.key)
	}
	if err != nil {
		return nil, err
	}
	u.close()
	return &meshapi.ArtifactPartReply{Received: u.received, Artifact: stored}, nil
}

// drop ends an upload that will not be stored: what reached the object
// store is removed.
func (u *upload) drop(cause error) {
	u.closeOnce.Do(func() {
		u.finish()
		_ = u.pw.CloseWithError(cause)
		u.cancel()
		u.dropped = true
		close(u.settled)
	})
}

// close ends an upload that was stored.
func (u *upload) close() {
	u.closeOnce.Do(func() {
		u.finish()
		u.cancel()
		close(u.settled)
	})
}

func (u *upload) finish() {
	u.idle.Stop()
	_ = u.sub.Unsubscribe()
	u.s.mu.Lock()
	delete(u.s.uploads, u.id)
	u.s.mu.Unlock()
}

// describe validates an artifact's metadata and completes it with what was
// measured of its content.
func describe(in *mesh.Artifact, m *contentMeter) (*mesh.Artifact, error) {
	name, err := mesh.NormalizeFilename(in.Filename)
	if err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"title": in.Title, "summary": in.Summary, "artifact_type": in.ArtifactType, "mime_type": in.MimeType} {
		if len(v) > maxMetaText {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "%s is longer than %d bytes", field, maxMetaText)
		}
	}
	if len(in.Keywords) > maxKeywords {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "at most %d keywords", maxKeywords)
	}
	mt := in.MimeType
	if mt != "" {
		if _, _, err := mime.ParseMediaType(mt); err != nil {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "mime_type %q is not a media type", mt)
		}
	} else {
		mt = guessMime(name, m.head, m.utf8())
	}
	return &mesh.Artifact{
		ArtifactType: in.ArtifactType, Filename: name, Title: in.Title, Summary: in.Summary,
		Keywords: in.Keywords, MimeType: mt, Size: m.size, SHA256: hex.EncodeToString(m.sha.Sum(nil)),
	}, nil
}
