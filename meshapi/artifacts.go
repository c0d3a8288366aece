package meshapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// Artifact operations (service "artifacts").
const (
	OpArtifactOpenInput = "open_input"
	OpArtifactGet       = "get"
	OpArtifactList      = "list"
	OpArtifactRead      = "read"
)

// OpenInputRequest starts writing a file given to AgentID with a
// conversation's input (an A2A file part): no run owns it. The content
// follows on bus.ArtifactInputSubject as an upload's does, and its end
// (ArtifactEnd, attempt 0) stores it as an input file of the conversation.
type OpenInputRequest struct {
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id"`
	// Size, when known, is the content's size: over the limit, the open
	// is refused at once.
	Size int64 `json:"size,omitempty"`
}

// GetArtifactRequest names an artifact.
type GetArtifactRequest struct {
	ArtifactID string `json:"artifact_id"`
}

// ListArtifactsRequest lists a run's artifacts.
type ListArtifactsRequest struct {
	TaskRunID string `json:"task_run_id"`
	// Region is the region that keeps the run (mesh.TaskRun.Region), and
	// its artifacts; for a run stored before runs named it, AgentID, whose
	// home region keeps them. Without either, the region that takes the
	// request lists its own.
	Region  string `json:"region,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
}

// ArtifactList is a run's artifacts, oldest first.
type ArtifactList struct {
	Artifacts []mesh.Artifact `json:"artifacts"`
}

// The artifacts service's operations for people and the platform's doors
// (a runtime's artifact writes are OpRuntimeArtifactOpen). An artifact's
// content is downloaded through routes of their own, which read it a part
// at a time (OpArtifactsRead).
var (
	OpArtifactsGet = define[GetArtifactRequest, mesh.Artifact](OpInfo{Name: OpArtifactGet, Service: bus.ServiceArtifacts, Caller: CallerOwner, Idempotent: true,
		REST: get("/artifacts/{artifactId}", map[string]string{"artifactId": "artifact_id"})})
	// The REST list first reads the run, for the region that keeps it.
	OpArtifactsList = define[ListArtifactsRequest, ArtifactList](OpInfo{Name: OpArtifactList, Service: bus.ServiceArtifacts, Caller: CallerOwner, Idempotent: true,
		REST: custom(get("/task-runs/{taskRunId}/artifacts", onRun))})
	OpArtifactsOpenInput = define[OpenInputRequest, OpenArtifactResponse](OpInfo{Name: OpArtifactOpenInput, Service: bus.ServiceArtifacts, Caller: CallerPlatform})
	OpArtifactsRead      = define[ReadArtifactRequest, ArtifactPart](OpInfo{Name: OpArtifactRead, Service: bus.ServiceArtifacts, Caller: CallerPlatform, Idempotent: true})
)

// GetArtifact returns artifact metadata.
func (c *Client) GetArtifact(ctx context.Context, artifactID string) (*mesh.Artifact, error) {
	return Send(ctx, c, OpArtifactsGet, GetArtifactRequest{ArtifactID: artifactID})
}

// ListArtifacts lists a run's artifacts.
func (c *Client) ListArtifacts(ctx context.Context, run *mesh.TaskRun) (*ArtifactList, error) {
	return Send(ctx, c, OpArtifactsList, ListArtifactsRequest{TaskRunID: run.ID, Region: run.Region, AgentID: run.TargetAgentID})
}

// OpenInputArtifact starts writing a file of a conversation's input
// through the artifacts service: write the content to the upload, then End
// it (attempt 0) with its file name and media type.
func (c *Client) OpenInputArtifact(ctx context.Context, req OpenInputRequest) (*ArtifactUpload, error) {
	open, err := Send(ctx, c, OpArtifactsOpenInput, req)
	if err != nil {
		return nil, err
	}
	return newArtifactUpload(ctx, c.nc, open, bus.ArtifactInputSubject(open.ArtifactID)), nil
}

// OpenArtifactRequest starts writing an artifact of a run the runtime holds
// (bus.RuntimeOpArtifactOpen). The content follows in ArtifactParts.
type OpenArtifactRequest struct {
	TaskRunID string `json:"task_run_id"`
	// Attempt is the attempt the runtime holds; 0 means whichever it holds.
	Attempt int `json:"attempt,omitempty"`
	// Size, when known, is the content's size: over the limit, the open
	// is refused at once.
	Size int64 `json:"size,omitempty"`
	// WriteKey, when set, makes the write happen once: a write of the run
	// with the key of an artifact already stored and attached to the run
	// is answered with that artifact (OpenArtifactResponse.Artifact), and
	// nothing more is sent. A runtime that retries a write whose answer it
	// never got (the platform went away) sends the same key again. At most
	// MaxWriteKeyBytes of letters, digits and ".:_-".
	WriteKey string `json:"write_key,omitempty"`
}

// MaxWriteKeyBytes bounds OpenArtifactRequest.WriteKey.
const MaxWriteKeyBytes = 128

// OpenArtifactResponse names the artifact being written and how to send it.
type OpenArtifactResponse struct {
	ArtifactID string `json:"artifact_id"`
	// ChunkBytes is the most content one ArtifactPart may carry.
	ChunkBytes int `json:"chunk_bytes"`
	// MaxBytes is the most content one artifact may have.
	MaxBytes int64 `json:"max_bytes"`
	// Artifact is set when the request's WriteKey names an artifact
	// already stored for the run: it is that artifact, and no content is
	// to be sent.
	Artifact *mesh.Artifact `json:"artifact,omitempty"`
}

// An opened artifact's content goes to its upload subject
// (bus.ArtifactUploadSubject) as requests whose body is the raw content,
// in order and one at a time, each with its offset in HeaderArtifactOffset;
// then one request with HeaderArtifactEnd set ends it, its body an
// ArtifactEnd. Each is answered with an ArtifactPartReply. A part whose
// offset is not the content received so far drops the upload, nothing
// stored (a writer that gives up sends offset -1).
const (
	HeaderArtifactOffset = "Mesh-Artifact-Offset"
	HeaderArtifactEnd    = "Mesh-Artifact-End"
)

// ArtifactEnd ends an artifact's content: the artifact is stored with this
// metadata (filename required; mime_type guessed when empty; the id, run,
// size and digest are the service's) and attached to the run.
type ArtifactEnd struct {
	// Attempt, when not 0, is the attempt of the run the writer holds, if
	// it did not say at the open (an HTTP runtime says it in its upload's
	// body, after the content perhaps).
	Attempt  int           `json:"attempt,omitempty"`
	Artifact mesh.Artifact `json:"artifact"`
}

// ArtifactPartReply answers a part: the content received so far, and after
// the end the stored artifact.
type ArtifactPartReply struct {
	Received int64          `json:"received"`
	Artifact *mesh.Artifact `json:"artifact,omitempty"`
}

// OpenArtifact starts writing an artifact of a run the runtime holds
// through the artifacts service. Write the content to the upload (it sends
// it in chunks: a NATS message is small), then End it.
func (c *RuntimeClient) OpenArtifact(ctx context.Context, req OpenArtifactRequest) (*ArtifactUpload, error) {
	open, err := Send(ctx, c, OpRuntimeArtifactOpen, req)
	if err != nil {
		return nil, err
	}
	return newArtifactUpload(ctx, c.nc, open, bus.ArtifactUploadSubject(c.agentID, c.runtimeID, open.ArtifactID)), nil
}

func newArtifactUpload(ctx context.Context, nc *nats.Conn, open *OpenArtifactResponse, subject string) *ArtifactUpload {
	return &ArtifactUpload{
		ctx: ctx, nc: nc, ID: open.ArtifactID, MaxBytes: open.MaxBytes, Stored: open.Artifact, subject: subject,
		buf: make([]byte, 0, max(open.ChunkBytes, 1)),
	}
}

// ArtifactUpload is an artifact being written: an io.Writer of its content.
type ArtifactUpload struct {
	// ID is the artifact's id.
	ID string
	// MaxBytes is the most content the artifact may have.
	MaxBytes int64
	// Stored, when not nil, is the artifact the open's write key names,
	// already stored: the writer sends nothing and uses it.
	Stored  *mesh.Artifact
	ctx     context.Context
	nc      *nats.Conn
	subject string
	buf     []byte
	sent    int64
}

// Write buffers content and sends each full chunk.
func (u *ArtifactUpload) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), cap(u.buf)-len(u.buf))
		u.buf = append(u.buf, p[:take]...)
		p = p[take:]
		if len(u.buf) == cap(u.buf) {
			if err := u.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// ReadFrom sends what r gives until it ends, a chunk at a time, with no
// buffer of its own.
func (u *ArtifactUpload) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		n, err := io.ReadFull(r, u.buf[len(u.buf):cap(u.buf)])
		u.buf = u.buf[:len(u.buf)+n]
		total += int64(n)
		if len(u.buf) == cap(u.buf) {
			if ferr := u.flush(); ferr != nil {
				return total, ferr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (u *ArtifactUpload) flush() error {
	if len(u.buf) == 0 {
		return nil
	}
	msg := nats.NewMsg(u.subject)
	msg.Header.Set(HeaderArtifactOffset, strconv.FormatInt(u.sent, 10))
	msg.Data = u.buf
	var r ArtifactPartReply
	if err := bus.CallMsg(u.ctx, u.nc, msg, &r); err != nil {
		return err
	}
	u.sent += int64(len(u.buf))
	u.buf = u.buf[:0]
	return nil
}

// End sends what is left of the content and ends it with meta (and the
// attempt held, when the open did not name it); it returns the stored
// artifact.
func (u *ArtifactUpload) End(attempt int, meta mesh.Artifact) (*mesh.Artifact, error) {
	if u.Stored != nil {
		return u.Stored, nil
	}
	if err := u.flush(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(ArtifactEnd{Attempt: attempt, Artifact: meta})
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(u.subject)
	msg.Header.Set(HeaderArtifactOffset, strconv.FormatInt(u.sent, 10))
	msg.Header.Set(HeaderArtifactEnd, "1")
	msg.Data = body
	var r ArtifactPartReply
	if err := bus.CallMsg(u.ctx, u.nc, msg, &r); err != nil {
		return nil, err
	}
	if r.Artifact == nil {
		return nil, mesh.Errorf(mesh.CodeInternal, "the artifacts service stored no artifact")
	}
	return r.Artifact, nil
}

// Abandon tells the artifacts service the content will not come, so it
// drops what it received at once rather than after its idle timeout.
func (u *ArtifactUpload) Abandon() {
	if u.Stored != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), time.Second)
	defer cancel()
	msg := nats.NewMsg(u.subject)
	msg.Header.Set(HeaderArtifactOffset, "-1")
	_ = bus.CallMsg(ctx, u.nc, msg, nil)
}

// ReadArtifactRequest asks for the part of an artifact's content that
// starts at Offset (OpArtifactRead). Each answer carries at most
// ArtifactPartBytes; a reader asks again from the end of the part it got,
// with the part's Next, until Next is empty.
type ReadArtifactRequest struct {
	ArtifactID string `json:"artifact_id"`
	// AgentID, when set, is the agent the reader reads for: another
	// agent's artifact is refused (FORBIDDEN).
	AgentID string `json:"agent_id,omitempty"`
	// TaskRunID, when set, is the run the artifact must be an output of:
	// any other artifact is NOT_FOUND.
	TaskRunID string `json:"task_run_id,omitempty"`
	// Offset is where the part starts in the content: 0 to the size.
	Offset int64 `json:"offset,omitempty"`
	// Cursor is the Next of the part that ended at Offset: where the
	// service finds the content from there without reading what comes
	// before. Empty (or stale), it finds Offset from the start.
	Cursor string `json:"cursor,omitempty"`
}

// ArtifactPartBytes is the most content one ArtifactPart carries: with its
// base64 in JSON, well under the NATS server's default payload limit.
const ArtifactPartBytes = 256 << 10

// ArtifactPart is one part of an artifact's content.
type ArtifactPart struct {
	// Offset is where Data starts in the content.
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
	// Size is the size of the whole content.
	Size int64 `json:"size"`
	// Next is the Cursor of the part after this one; empty when Data
	// reaches the end of the content.
	Next string `json:"next,omitempty"`
}

// ReadArtifact reads an artifact's content from req.Offset over the bus, a
// part at a time. The first part is read before it returns, so a missing
// or refused artifact is its error, before anything was written anywhere.
// It holds one part in memory.
func (c *Client) ReadArtifact(ctx context.Context, req ReadArtifactRequest) (*ArtifactReader, error) {
	r := &ArtifactReader{ctx: ctx, c: c, req: req}
	if err := r.fetch(); err != nil {
		return nil, err
	}
	r.Size = r.part.Size
	return r, nil
}

// ArtifactReader is an artifact's content being read: an io.Reader.
type ArtifactReader struct {
	// Size is the size of the whole content.
	Size int64
	ctx  context.Context
	c    *Client
	req  ReadArtifactRequest
	part ArtifactPart
	data []byte // what is left of part.Data
	end  bool
}

// errNoProgress is a part that is empty before the end: the service would
// be asked the same again forever.
var errNoProgress = mesh.Errorf(mesh.CodeInternal, "the artifacts service sent an empty part before the end of the content")

// Read reads the content, asking for the next part when the last is used up.
func (r *ArtifactReader) Read(p []byte) (int, error) {
	for len(r.data) == 0 {
		if r.end {
			return 0, io.EOF
		}
		if err := r.fetch(); err != nil {
			return 0, err
		}
		if len(r.data) == 0 && !r.end {
			return 0, errNoProgress
		}
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// WriteTo writes the rest of the content to w, a part at a time.
func (r *ArtifactReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.data) > 0 {
			n, err := w.Write(r.data)
			total += int64(n)
			r.data = r.data[n:]
			if err != nil {
				return total, err
			}
		}
		if r.end {
			return total, nil
		}
		if err := r.fetch(); err != nil {
			return total, err
		}
		if len(r.data) == 0 && !r.end {
			return total, errNoProgress
		}
	}
}

func (r *ArtifactReader) fetch() error {
	p, err := Send(r.ctx, r.c, OpArtifactsRead, r.req)
	if err != nil {
		return err
	}
	part := *p
	if part.Offset != r.req.Offset {
		return mesh.Errorf(mesh.CodeInternal, "the artifacts service sent a part at offset %d, not %d", part.Offset, r.req.Offset)
	}
	r.part, r.data = part, part.Data
	r.req.Offset += int64(len(part.Data))
	r.req.Cursor = part.Next
	r.end = part.Next == ""
	return nil
}
