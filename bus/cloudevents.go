package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
)

// CloudEvents binary mode over NATS: attributes and extensions travel as
// lowercase "ce-" headers, datacontenttype as "content-type", and the data as
// the message body (CloudEvents NATS protocol binding, v1.0.2).
const (
	ceHeaderPrefix    = "ce-"
	headerContentType = "content-type"
)

var ceSpecs = spec.WithPrefix(ceHeaderPrefix)

// DataSchemaBase is where the JSON Schemas of event data are named: the
// $id base of the documents in schemas/. The platform serves each of them at
// /schemas/ followed by the same path (events/<kind>.<verb>.json).
const DataSchemaBase = "https://a2amesh.dev/schemas/"

// DataSchema is the dataschema attribute of every event of a type: the $id
// of the JSON Schema of its data, events/<kind>.<verb>.json for
// dev.a2amesh.<kind>.<verb>.
func DataSchema(eventType string) string {
	return DataSchemaBase + "events/" + strings.TrimPrefix(eventType, mesh.EventTypePrefix) + ".json"
}

// EncodeEvent writes e into a NATS message in binary mode.
func EncodeEvent(ctx context.Context, e *event.Event, subject string) (*nats.Msg, error) {
	msg := nats.NewMsg(subject)
	w := &natsBinaryWriter{msg: msg}
	ctx = binding.WithForceBinary(ctx)
	if _, err := binding.Write(ctx, binding.ToMessage(e), nil, w); err != nil {
		return nil, fmt.Errorf("encode cloudevent %s: %w", e.ID(), err)
	}
	return msg, nil
}

// DecodeEvent reads a binary-mode (or structured JSON) CloudEvent from a NATS message.
func DecodeEvent(ctx context.Context, msg *nats.Msg) (*event.Event, error) {
	e, err := binding.ToEvent(ctx, newNATSMessage(msg))
	if err != nil {
		return nil, fmt.Errorf("decode cloudevent on %s: %w", msg.Subject, err)
	}
	return e, nil
}

// EventType returns the type of a binary-mode event message without decoding
// the event, for consumers that act on a few types only.
func EventType(h nats.Header) string { return h.Get(ceHeaderPrefix + "type") }

// TaskRunOf reads the run a binary-mode task_run event carries. Its revision
// is the event's sequence (the revision the write that the event announces
// gave the record) when that is later than the one the data holds.
func TaskRunOf(h nats.Header, data []byte) (*mesh.TaskRun, error) {
	var run mesh.TaskRun
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, fmt.Errorf("task run event: %w", err)
	}
	if rev, err := strconv.ParseUint(h.Get(ceHeaderPrefix+"sequence"), 10, 64); err == nil && rev > run.Revision {
		run.Revision = rev
	}
	return &run, nil
}

type natsBinaryWriter struct{ msg *nats.Msg }

func (w *natsBinaryWriter) Start(context.Context) error { return nil }
func (w *natsBinaryWriter) End(context.Context) error   { return nil }

func (w *natsBinaryWriter) SetData(data io.Reader) error {
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	w.msg.Data = b
	return nil
}

func (w *natsBinaryWriter) SetAttribute(attr spec.Attribute, value any) error {
	s, err := types.Format(value)
	if err != nil {
		return err
	}
	if attr.Kind() == spec.DataContentType {
		w.msg.Header.Set(headerContentType, s)
		return nil
	}
	w.msg.Header.Set(ceHeaderPrefix+attr.Name(), s)
	return nil
}

func (w *natsBinaryWriter) SetExtension(name string, value any) error {
	s, err := types.Format(value)
	if err != nil {
		return err
	}
	w.msg.Header.Set(ceHeaderPrefix+name, s)
	return nil
}

// natsMessage adapts a NATS message to the SDK's binding.MessageReader.
type natsMessage struct {
	msg     *nats.Msg
	version spec.Version
	format  format.Format
}

func newNATSMessage(msg *nats.Msg) *natsMessage {
	m := &natsMessage{msg: msg}
	if v := msg.Header.Get(ceSpecs.PrefixedSpecVersionName()); v != "" {
		m.version = ceSpecs.Version(v)
	} else {
		m.format = format.Lookup(msg.Header.Get(headerContentType))
	}
	return m
}

func (m *natsMessage) ReadEncoding() binding.Encoding {
	switch {
	case m.version != nil:
		return binding.EncodingBinary
	case m.format != nil:
		return binding.EncodingStructured
	}
	return binding.EncodingUnknown
}

func (m *natsMessage) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.format == nil {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, m.format, bytes.NewReader(m.msg.Data))
}

func (m *natsMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	for key, values := range m.msg.Header {
		if len(values) == 0 {
			continue
		}
		lower := strings.ToLower(key)
		if lower == headerContentType {
			if err := w.SetAttribute(m.version.AttributeFromKind(spec.DataContentType), values[0]); err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(lower, ceHeaderPrefix) {
			continue
		}
		var err error
		if attr := m.version.Attribute(lower); attr != nil {
			err = w.SetAttribute(attr, values[0])
		} else {
			err = w.SetExtension(strings.TrimPrefix(lower, ceHeaderPrefix), values[0])
		}
		if err != nil {
			return err
		}
	}
	if len(m.msg.Data) > 0 {
		return w.SetData(bytes.NewReader(m.msg.Data))
	}
	return nil
}

// GetAttribute and GetExtension make natsMessage a binding.MessageMetadataReader,
// which the SDK's binary decoding asserts its message to be (it panics otherwise).
func (m *natsMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	if m.version == nil {
		return nil, nil
	}
	attr := m.version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	name := ceHeaderPrefix + attr.Name()
	if k == spec.DataContentType {
		name = headerContentType
	}
	if v, ok := m.header(name); ok {
		return attr, v
	}
	return attr, nil
}

func (m *natsMessage) GetExtension(name string) any {
	if v, ok := m.header(ceHeaderPrefix + strings.ToLower(name)); ok {
		return v
	}
	return nil
}

// header returns the first value of a header, whatever the case of its key.
func (m *natsMessage) header(lowerKey string) (string, bool) {
	for key, values := range m.msg.Header {
		if len(values) > 0 && strings.ToLower(key) == lowerKey {
			return values[0], true
		}
	}
	return "", false
}

func (m *natsMessage) Finish(error) error { return nil }

// ErrNotEvent is returned for messages that carry no CloudEvent.
var ErrNotEvent = errors.New("bus: message is not a cloudevent")
