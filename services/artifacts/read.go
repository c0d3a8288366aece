package artifacts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Reading an artifact: the platform's services (the gateway's downloads, the
// delegation service) ask for its content a part at a time, each part a
// request any instance answers. An object's content is stored as chunk
// messages on one subject of the object store's stream, in order (the
// object store's format: $O.<bucket>.C.<nuid> on OBJ_<bucket>); a part is
// read from there with direct gets, so a read holds no consumer and no
// state between parts, and a reader that lost its instance, or wants to
// start further on, asks again with an offset. A part's cursor names the
// stream sequence of the chunk where the next part starts, so reading a
// whole artifact costs one get per chunk.

// readCursor is where a part starts in the store: the chunk at or after
// stream sequence seq holds the content from offset start.
type readCursor struct {
	seq   uint64
	start int64
}

func (c readCursor) String() string {
	return strconv.FormatUint(c.seq, 10) + ":" + strconv.FormatInt(c.start, 10)
}

// parseCursor reads a cursor; anything else is the start of the content.
func parseCursor(s string) readCursor {
	seq, start, ok := strings.Cut(s, ":")
	if !ok {
		return readCursor{seq: 1}
	}
	c := readCursor{}
	var err1, err2 error
	c.seq, err1 = strconv.ParseUint(seq, 10, 64)
	c.start, err2 = strconv.ParseInt(start, 10, 64)
	if err1 != nil || err2 != nil || c.seq == 0 || c.start < 0 {
		return readCursor{seq: 1}
	}
	return c
}

func (s *Service) handleRead(ctx context.Context, in *meshapi.ReadArtifactRequest) (*meshapi.ArtifactPart, error) {
	a, err := s.get(ctx, in.ArtifactID)
	if err != nil {
		return nil, err
	}
	// The readers check who may read before they ask; these checks keep a
	// reader that names an agent or a run to what it named.
	if in.AgentID != "" && a.AgentID != in.AgentID {
		return nil, mesh.Errorf(mesh.CodeForbidden, "the artifact belongs to another agent")
	}
	if in.TaskRunID != "" && (a.Role == mesh.ArtifactRoleInput || a.TaskRunID != in.TaskRunID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "artifact %s is not one of task %s's", a.ID, in.TaskRunID)
	}
	return s.readPart(ctx, a.ID, in.Offset, parseCursor(in.Cursor))
}

// readPart reads the part of an object's content from offset: at most
// meshapi.ArtifactPartBytes.
func (s *Service) readPart(ctx context.Context, id string, offset int64, at readCursor) (*meshapi.ArtifactPart, error) {
	info, err := s.objects.GetInfo(ctx, id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "artifact %s has no content", id)
	}
	if err != nil {
		return nil, fmt.Errorf("artifact info %s: %w", id, err)
	}
	size := int64(info.Size)
	if offset < 0 || offset > size {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "offset %d is outside the content's %d bytes", offset, size)
	}
	if at.start > offset {
		at = readCursor{seq: 1}
	}
	part := &meshapi.ArtifactPart{Offset: offset, Size: size, Data: []byte{}}
	subject := bus.ObjectChunkSubject(s.objectStore, info.NUID)
	for at.start < size && len(part.Data) < meshapi.ArtifactPartBytes {
		chunk, err := s.chunks.GetMsg(ctx, at.seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, mesh.Errorf(mesh.CodeInternal, "artifact %s: content ends at %d bytes, not %d", id, at.start, size)
		}
		if err != nil {
			return nil, fmt.Errorf("read artifact %s: %w", id, err)
		}
		n := int64(len(chunk.Data))
		if n == 0 {
			return nil, mesh.Errorf(mesh.CodeInternal, "artifact %s: an empty chunk at %d bytes", id, at.start)
		}
		if offset >= at.start+n {
			// Before the part: only walked when a reader gave no cursor.
			at = readCursor{seq: chunk.Sequence + 1, start: at.start + n}
			continue
		}
		from := offset - at.start
		take := min(n-from, int64(meshapi.ArtifactPartBytes-len(part.Data)))
		part.Data = append(part.Data, chunk.Data[from:from+take]...)
		offset += take
		if from+take < n {
			at = readCursor{seq: chunk.Sequence, start: at.start}
			break
		}
		at = readCursor{seq: chunk.Sequence + 1, start: at.start + n}
	}
	if offset < size {
		part.Next = at.String()
	}
	return part, nil
}
