package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// A runtime's write may carry a key (meshapi.OpenArtifactRequest.WriteKey)
// so that writing it again, after an answer that never came back, does
// not store the artifact twice. The key's record, one per key and run in
// the metadata bucket, names the artifact last written with it; it is put
// before the artifact is attached to the run, so an artifact attached is
// always found again from its key. An open whose key names an artifact
// the run lists is answered with it; one whose key names an artifact the
// run does not list (that write failed or never ended) writes anew.

// writeRecord is what a write key's record holds.
type writeRecord struct {
	ArtifactID string `json:"artifact_id"`
}

// writeKey is the record key of a run's write key: the key is hashed, so
// any key the runtime chooses is one token of the bucket's keys.
func writeKey(runID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "w." + runID + "." + hex.EncodeToString(sum[:16])
}

// checkWriteKey refuses a key over its bound or outside its characters.
func checkWriteKey(key string) error {
	if len(key) > meshapi.MaxWriteKeyBytes {
		return mesh.Errorf(mesh.CodeInvalidRequest, "write_key is longer than %d bytes", meshapi.MaxWriteKeyBytes)
	}
	for _, r := range key {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == ':' || r == '_' || r == '-'
		if !ok {
			return mesh.Errorf(mesh.CodeInvalidRequest, "write_key may hold only letters, digits and \".:_-\"")
		}
	}
	return nil
}

// written returns the artifact of run that key wrote, nil when there is
// none: no write with the key, or one whose artifact the run does not list.
func (s *Service) written(ctx context.Context, run *mesh.TaskRun, key string) (*mesh.Artifact, error) {
	rec, _, err := s.writes.Get(ctx, writeKey(run.ID, key))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, ref := range run.Artifacts {
		if ref.ArtifactID != rec.ArtifactID {
			continue
		}
		a, err := s.get(ctx, ref.ArtifactID)
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, mesh.ErrNotFound) {
			return nil, err
		}
		// Attached, its metadata not yet stored (the write that stored
		// it stopped in between): the run's reference says what it is.
		return &mesh.Artifact{
			ID: ref.ArtifactID, TaskRunID: run.ID, AgentID: run.TargetAgentID, Filename: ref.Filename,
			ArtifactType: ref.ArtifactType, Title: ref.Title, MimeType: ref.MimeType, Size: ref.Size, CreatedAt: ref.CreatedAt,
		}, nil
	}
	return nil, nil
}

// noteWrite records that key writes artifact id of run.
func (s *Service) noteWrite(ctx context.Context, runID, key, id string) error {
	_, err := s.writes.Put(ctx, writeKey(runID, key), &writeRecord{ArtifactID: id})
	return err
}
