package partner

import (
	"errors"
	"net/http"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// webhook is POST /a2a/webhook: a partner platform's callback about a task
// this platform delegated to it. The signature (partnerapi.HeaderSignature,
// keyed with the partner's shared secret) is the credential; the
// delegation service checks it and moves the delegating run. Unknown
// partners and bad signatures get 401; a state the task cannot move to
// (seed 003's machine) 409 with -32003.
func (d *Endpoint) webhook(w http.ResponseWriter, r *http.Request) {
	const internal = "Webhook processing failed"
	if err := d.cfg.Admission.Allow(w, admission.Anonymous(r)); err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	body, de := d.readBody(w, r)
	if de != nil {
		writeError(w, de)
		return
	}
	partnerID, ts, sig := r.Header.Get(partnerapi.HeaderPartnerID), r.Header.Get(partnerapi.HeaderTimestamp), r.Header.Get(partnerapi.HeaderSignature)
	if partnerID == "" || ts == "" || sig == "" {
		writeError(w, refuse(partnerapi.CodeAuthenticationFailed, http.StatusUnauthorized,
			"Authentication failed: a callback carries %s, %s and %s", partnerapi.HeaderPartnerID, partnerapi.HeaderTimestamp, partnerapi.HeaderSignature))
		return
	}
	err := d.cfg.Client.PartnerCallback(r.Context(), meshapi.PartnerCallbackRequest{PartnerID: partnerID, Timestamp: ts, Signature: sig, Body: body})
	var me *mesh.Error
	if errors.Is(err, mesh.ErrNotFound) && errors.As(err, &me) {
		writeError(w, refuse(partnerapi.CodeTaskNotFound, http.StatusNotFound, "Task not found: %s", me.Message))
		return
	}
	if errors.Is(err, mesh.ErrInvalidTransition) && errors.As(err, &me) {
		writeError(w, refuse(partnerapi.CodeInvalidTaskState, http.StatusConflict, "Invalid task state: %s", me.Message))
		return
	}
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}
