package a2aserver

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// serveArtifact is GET /a2a/{agentId}/artifacts/{artifactId}, the link of
// file parts: the content of a task's file, for whoever may read the task
// (the same credentials and the a2a:read scope). A file given with a message
// is read by whoever may read the context it was given in.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request) {
	agent, err := s.agent(r.Context(), r.PathValue("agentId"))
	if err != nil {
		s.cfg.WriteError(w, r, err)
		return
	}
	c, err := s.admit(w, r, agent, methodGet)
	if err != nil {
		writeRESTError(w, err, retryMeta(w))
		return
	}
	ctx := withRequest(r.Context(), &request{agent: agent, caller: c})
	notFound := a2a.NewError(a2a.ErrTaskNotFound, "artifact not found")
	art, err := s.client.GetArtifact(ctx, r.PathValue("artifactId"))
	if err != nil || art.AgentID != agent.ID {
		writeRESTError(w, notFound, nil)
		return
	}
	if art.Role == mesh.ArtifactRoleInput {
		err = s.checkContextReader(ctx, art.ConversationID)
	} else {
		_, _, err = s.handler.store.get(ctx, art.TaskRunID)
	}
	if err != nil {
		writeRESTError(w, notFound, nil)
		return
	}
	s.writeArtifact(w, r, art, agent.ID)
}

// checkContextReader admits the caller whose context it is (and the owner).
func (s *Server) checkContextReader(ctx context.Context, contextID string) error {
	rq := requestOf(ctx)
	if rq.caller.Owner() {
		return nil
	}
	owner, err := s.records.contextOwner(ctx, rq.agent.ID, contextID)
	if err != nil {
		return err
	}
	if owner == nil || owner.AgentID != rq.agent.ID || owner.Caller != rq.caller.ID {
		return errTaskNotFound
	}
	return nil
}

// serveRuntimeArtifact is GET /agent-runtimes/runtime/artifacts/{id}/content:
// a runtime fetches the files of its own agent's tasks, to hand them to the
// adapter (which never calls the platform).
func (s *Server) serveRuntimeArtifact(w http.ResponseWriter, r *http.Request, runtimeAgent string) {
	art, err := s.client.GetArtifact(r.Context(), r.PathValue("artifactId"))
	if err == nil && art.AgentID != runtimeAgent {
		err = mesh.Errorf(mesh.CodeForbidden, "the artifact belongs to another agent")
	}
	if err != nil {
		s.cfg.WriteError(w, r, err)
		return
	}
	s.writeArtifact(w, r, art, runtimeAgent)
}

// writeArtifact streams an artifact of agentID's as a download that a
// browser never runs as a page of the platform's origin. The content comes
// from the artifacts service a part at a time.
func (s *Server) writeArtifact(w http.ResponseWriter, r *http.Request, a *mesh.Artifact, agentID string) {
	content, err := s.client.ReadArtifact(r.Context(), meshapi.ReadArtifactRequest{ArtifactID: a.ID, AgentID: agentID})
	if err != nil {
		s.cfg.WriteError(w, r, fmt.Errorf("read artifact %s: %w", a.ID, err))
		return
	}
	WriteDownload(w, a, content)
}

// WriteDownload writes an artifact's content as an attachment, with the
// headers every route that serves artifact content sends: artifacts are
// agent output, so a browser must never sniff them into something else or
// run them as a page of the platform's origin.
func WriteDownload(w http.ResponseWriter, a *mesh.Artifact, content io.WriterTo) {
	h := w.Header()
	h.Set("Content-Type", a.MimeType)
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(a.Filename)}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("ETag", `"`+a.SHA256+`"`)
	_, _ = content.WriteTo(w)
}
