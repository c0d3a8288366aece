package a2aserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// turnInput is a run's input made from an A2A message (see docs/a2a.md):
// the text parts joined in text, the data parts in data (the value of the
// one, or the list of several), the file parts in attachments, and the
// message itself, every part in order, in message. The earlier turns of a
// continued task are added by the task queue.
type turnInput struct {
	Text        string                  `json:"text"`
	Data        any                     `json:"data,omitempty"`
	Attachments []adapterapi.Attachment `json:"attachments,omitempty"`
	Message     *adapterapi.Message     `json:"message,omitempty"`
}

// hasFiles reports whether a message carries inline files.
func hasFiles(msg *a2a.Message) bool {
	for _, p := range msg.Parts {
		if _, ok := p.Content.(a2a.Raw); ok {
			return true
		}
	}
	return false
}

// input turns a message into a run's input. Inline files are stored in the
// artifact store as input files of the conversation (the runtime fetches
// them for the adapter); the message as recorded in the task's history
// links to them instead of carrying their bytes.
func (s *Server) input(ctx context.Context, agentID, contextID string, msg *a2a.Message) (*turnInput, *a2a.Message, error) {
	if err := checkTextSize(msg); err != nil {
		return nil, nil, err
	}
	in := &turnInput{Message: &adapterapi.Message{MessageID: msg.ID, Role: roleName(msg.Role)}}
	stored := &a2a.Message{ID: msg.ID, Role: msg.Role, Metadata: msg.Metadata, Extensions: msg.Extensions, ReferenceTasks: msg.ReferenceTasks}
	var texts []string
	var data []any
	for i, p := range msg.Parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
			stored.Parts = append(stored.Parts, p)
			in.Message.Parts = append(in.Message.Parts, adapterapi.Part{Kind: adapterapi.PartText, Text: string(c)})
		case a2a.Data:
			data = append(data, c.Value)
			stored.Parts = append(stored.Parts, p)
			in.Message.Parts = append(in.Message.Parts, adapterapi.Part{Kind: adapterapi.PartData, Data: c.Value})
		case a2a.URL:
			att, err := uriAttachment(p, c, i)
			if err != nil {
				return nil, nil, err
			}
			in.Attachments = append(in.Attachments, att)
			stored.Parts = append(stored.Parts, p)
			in.Message.Parts = append(in.Message.Parts, filePart(att))
		case a2a.Raw:
			att, link, err := s.storeFile(ctx, agentID, contextID, p, c, i)
			if err != nil {
				return nil, nil, err
			}
			in.Attachments = append(in.Attachments, att)
			stored.Parts = append(stored.Parts, link)
			in.Message.Parts = append(in.Message.Parts, filePart(att))
		default:
			return nil, nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("part %d has no content", i))
		}
	}
	in.Message.Compact()
	in.Text = strings.Join(texts, "\n")
	switch len(data) {
	case 0:
	case 1:
		in.Data = data[0]
	default:
		in.Data = data
	}
	return in, stored, nil
}

// checkTextSize refuses a message whose text alone is larger than a run's
// input may be, before any of its files is stored.
func checkTextSize(msg *a2a.Message) error {
	n := 0
	for _, p := range msg.Parts {
		if t, ok := p.Content.(a2a.Text); ok {
			n += len(t)
		}
	}
	if n > mesh.MaxInputBytes {
		return inputTooLarge(n)
	}
	return nil
}

// roleName is a message role as input.message and input.history name it.
func roleName(r a2a.MessageRole) string {
	if r == a2a.MessageRoleAgent {
		return "agent"
	}
	return "user"
}

// filePart is a file part of input.message: the attachment it became,
// named by its URI or by its stored artifact (whose bytes the adapter gets
// in input.attachments).
func filePart(att adapterapi.Attachment) adapterapi.Part {
	return adapterapi.Part{Kind: adapterapi.PartFile, Name: att.Name, MimeType: att.MimeType, URI: att.URI, ArtifactID: att.ArtifactID}
}

// inputJSON is a turn's input as the run takes it, within mesh.MaxInputBytes:
// a run record carries it whole in one bus message. input.message repeats
// the text and data, so it is left out when the input would not fit with
// it: the limit stays the one of the text, data and attachments.
func inputJSON(in *turnInput) (json.RawMessage, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if len(raw) > mesh.MaxInputBytes && in.Message != nil {
		bare := *in
		bare.Message = nil
		return inputJSON(&bare)
	}
	if len(raw) > mesh.MaxInputBytes {
		return nil, inputTooLarge(len(raw))
	}
	return raw, nil
}

func inputTooLarge(n int) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("the message's text and data are %d bytes; a task takes at most %d: send larger content as a file part", n, mesh.MaxInputBytes))
}

// uriAttachment is a file part the caller left at a URI: the adapter gets
// the URI to fetch itself.
func uriAttachment(p *a2a.Part, u a2a.URL, i int) (adapterapi.Attachment, error) {
	parsed, err := url.Parse(string(u))
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" || len(u) > 4096 {
		return adapterapi.Attachment{}, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("file part %d: the URI must be an http(s) URL", i))
	}
	return adapterapi.Attachment{Name: fileName(p.Filename, path.Base(parsed.Path), i), MimeType: p.MediaType, URI: string(u)}, nil
}

// storeFile keeps an inline file for the run that reads it.
func (s *Server) storeFile(ctx context.Context, agentID, contextID string, p *a2a.Part, content a2a.Raw, i int) (adapterapi.Attachment, *a2a.Part, error) {
	if int64(len(content)) > s.cfg.MaxFileBytes {
		return adapterapi.Attachment{}, nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("file part %d is larger than %d bytes; give larger files by URI", i, s.cfg.MaxFileBytes))
	}
	name := fileName(p.Filename, "", i)
	mt := p.MediaType
	if mt == "" {
		if mt = mime.TypeByExtension(path.Ext(name)); mt == "" {
			mt = http.DetectContentType(content)
		}
	} else if _, _, err := mime.ParseMediaType(mt); err != nil {
		return adapterapi.Attachment{}, nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("file part %d: mediaType %q is not a media type", i, mt))
	}
	stored, err := s.writeInputFile(ctx, agentID, contextID, content, mesh.Artifact{Filename: name, MimeType: mt})
	if err != nil {
		return adapterapi.Attachment{}, nil, toA2A(s.log, err)
	}
	link := a2a.NewFileURLPart(a2a.URL(s.download(agentID, stored.ID)), stored.MimeType)
	link.Filename = stored.Filename
	att := adapterapi.Attachment{Name: stored.Filename, MimeType: stored.MimeType, Size: stored.Size, ArtifactID: stored.ID}
	return att, link, nil
}

// fileName is a safe file name for part i: the caller's, reduced to its
// last element, or one made up.
func fileName(given, fallback string, i int) string {
	for _, cand := range []string{given, fallback} {
		cand = path.Base(strings.ReplaceAll(cand, `\`, "/"))
		if cand == "." || cand == "/" || cand == "" || !utf8.ValidString(cand) {
			continue
		}
		if name, err := mesh.NormalizeFilename(cand); err == nil {
			return name
		}
	}
	return fmt.Sprintf("attachment-%d", i+1)
}

// writeInputFile writes an input file's content through the artifacts
// service, in chunks on the bus, and stores it with meta (its name and
// media type): the service measures, hashes and keeps it.
func (s *Server) writeInputFile(ctx context.Context, agentID, contextID string, content []byte, meta mesh.Artifact) (*mesh.Artifact, error) {
	up, err := s.client.OpenInputArtifact(ctx, meshapi.OpenInputRequest{AgentID: agentID, ConversationID: contextID, Size: int64(len(content))})
	if err != nil {
		return nil, err
	}
	if _, err := up.ReadFrom(bytes.NewReader(content)); err != nil {
		up.Abandon()
		return nil, fmt.Errorf("store file part: %w", err)
	}
	return up.End(0, meta)
}
