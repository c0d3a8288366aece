package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/internal/jsontext"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// StructuredEvent is a stored event in CloudEvents' structured JSON mode,
// as GET /events sends it, with what stream filters read.
type StructuredEvent struct {
	// Body is the event in structured JSON: the bytes json.Marshal gives
	// for the event DecodeEvent reads.
	Body []byte
	// Type is the event's type.
	Type string
	// Data is the event's data as stored.
	Data []byte
}

// EncodeStructured turns an event message into structured JSON. A
// binary-mode event in the shape the platform's publishers write (plain
// ASCII attributes, JSON data) is written straight from its headers, with no
// event in between, since each of a stream's events is encoded once for
// every stream reader a gateway serves; any other is decoded by the
// CloudEvents SDK and encoded by encoding/json, which the direct encoding
// matches byte for byte (TestEncodeStructured_IsWhatTheSDKWrites,
// FuzzEncodeStructured).
func EncodeStructured(ctx context.Context, msg *nats.Msg) (StructuredEvent, error) {
	if e, ok := encodeStructuredDirect(msg); ok {
		return e, nil
	}
	ev, err := DecodeEvent(ctx, msg)
	if err != nil {
		return StructuredEvent{}, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return StructuredEvent{}, fmt.Errorf("encode cloudevent %s: %w", ev.ID(), err)
	}
	return StructuredEvent{Body: body, Type: ev.Type(), Data: ev.Data()}, nil
}

// structuredAttrs are the attributes of a 1.0 binary-mode event the direct
// encoding writes, in the SDK's order; extensions follow the data, by name.
type structuredAttrs struct {
	id, source, typ, subject, dataSchema, time string
	exts                                       [][2]string
}

// encodeStructuredDirect writes msg's event from its headers, or reports
// false when the event is not in the shape it handles.
func encodeStructuredDirect(msg *nats.Msg) (StructuredEvent, bool) {
	var a structuredAttrs
	var version, contentType string
	for key, values := range msg.Header {
		if len(values) == 0 {
			continue
		}
		v := values[0]
		switch {
		case key == headerContentType:
			contentType = v
			continue
		case !strings.HasPrefix(key, ceHeaderPrefix):
			if strings.HasPrefix(strings.ToLower(key), ceHeaderPrefix) || strings.EqualFold(key, headerContentType) {
				return StructuredEvent{}, false // the SDK's reading is case-blind
			}
			continue
		}
		if !jsontext.Plain(v) || strings.TrimSpace(v) != v { // the SDK trims some attributes
			return StructuredEvent{}, false
		}
		switch name := key[len(ceHeaderPrefix):]; name {
		case "specversion":
			version = v
		case "id":
			a.id = v
		case "source":
			a.source = v
		case "type":
			a.typ = v
		case "subject":
			a.subject = v
		case "dataschema":
			a.dataSchema = v
		case "time":
			a.time = v
		case "datacontenttype":
			return StructuredEvent{}, false
		default:
			if !event.IsExtensionNameValid(name) || strings.ToLower(name) != name {
				return StructuredEvent{}, false
			}
			a.exts = append(a.exts, [2]string{name, v})
		}
	}
	// The SDK refuses blank required attributes, a blank subject and a
	// data schema that is not an absolute URI.
	if version != event.CloudEventsVersionV1 || blank(a.id) || blank(a.typ) || blank(a.source) ||
		(a.subject != "" && blank(a.subject)) || contentType != event.ApplicationJSON ||
		!canonicalURI(a.source, false) || (a.dataSchema != "" && !canonicalURI(a.dataSchema, true)) || !canonicalTime(a.time) ||
		bytes.ContainsAny(msg.Data, "<>&\u2028\u2029") {
		return StructuredEvent{}, false
	}
	body := bytes.NewBuffer(make([]byte, 0, 256+len(msg.Data)))
	body.WriteString(`{"specversion":"1.0","id":"`)
	body.WriteString(a.id)
	body.WriteString(`","source":"`)
	body.WriteString(a.source)
	body.WriteString(`","type":"`)
	body.WriteString(a.typ)
	body.WriteByte('"')
	writeAttr := func(name, v string) {
		if v != "" {
			body.WriteString(`,"`)
			body.WriteString(name)
			body.WriteString(`":"`)
			body.WriteString(v)
			body.WriteByte('"')
		}
	}
	writeAttr("subject", a.subject)
	writeAttr("datacontenttype", contentType)
	writeAttr("dataschema", a.dataSchema)
	writeAttr("time", a.time)
	if len(msg.Data) > 0 {
		body.WriteString(`,"data":`)
		// What encoding/json does to a Marshaler's output: compacted, and
		// refused when it is not JSON.
		if json.Compact(body, msg.Data) != nil {
			return StructuredEvent{}, false
		}
	}
	slices.SortFunc(a.exts, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
	for _, ext := range a.exts {
		writeAttr(ext[0], ext[1])
	}
	body.WriteByte('}')
	return StructuredEvent{Body: body.Bytes(), Type: a.typ, Data: msg.Data}, true
}

// canonicalTime reports whether t is an RFC 3339 time in UTC as the SDK
// writes it, so that it can be copied as it is.
func canonicalTime(t string) bool {
	if t == "" {
		return true
	}
	parsed, err := time.Parse(time.RFC3339Nano, t)
	return err == nil && parsed.UTC().Format(time.RFC3339Nano) == t
}

// uris remembers which URIs (sources, data schemas) the SDK writes back
// unchanged: a platform has a few dozen, and at most uriCacheMax are kept.
var uris uriCache

// uriCacheMax bounds uris; a URI beyond it is parsed each time.
const uriCacheMax = 1024

// uriCache is what parsing found of each URI seen.
type uriCache struct {
	seen sync.Map // string -> uriCheck
	mu   sync.Mutex
	n    int
}

// uriCheck is what parsing found of one URI.
type uriCheck struct{ canonical, absolute bool }

func (c *uriCache) check(u string) uriCheck {
	if v, ok := c.seen.Load(u); ok {
		return v.(uriCheck)
	}
	parsed, err := url.Parse(u)
	check := uriCheck{canonical: err == nil && parsed.String() == u, absolute: err == nil && parsed.IsAbs()}
	c.mu.Lock()
	if c.n < uriCacheMax {
		c.n++
		c.seen.Store(u, check)
	}
	c.mu.Unlock()
	return check
}

// blank reports whether s is empty once white space is trimmed.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// canonicalURI reports whether u is a URI the SDK writes back as it is
// (and, when absolute is asked, an absolute one).
func canonicalURI(u string, absolute bool) bool {
	c := uris.check(u)
	return c.canonical && (c.absolute || !absolute)
}
