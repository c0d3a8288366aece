package gateway

import (
	"net/http"

	"github.com/a2amesh/a2amesh/meshapi"
)

// Event consumer credentials for NATS (owner credential).

func (g *Gateway) createConsumer(w http.ResponseWriter, r *http.Request) {
	var in meshapi.CreateConsumerRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	res, err := g.client.CreateConsumer(r.Context(), in)
	if err == nil {
		// The answer carries the credential, shown this once.
		w.Header().Set("Cache-Control", "no-store")
	}
	g.reply(w, r, http.StatusCreated, res, err)
}

func (g *Gateway) listConsumers(w http.ResponseWriter, r *http.Request) {
	l, err := g.client.ListConsumers(r.Context())
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) deleteConsumer(w http.ResponseWriter, r *http.Request) {
	if err := g.client.DeleteConsumer(r.Context(), r.PathValue("consumerId")); err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
