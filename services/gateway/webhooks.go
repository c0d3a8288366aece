package gateway

import (
	"net/http"

	"github.com/a2amesh/a2amesh/meshapi"
)

// Webhook subscriptions and their deliveries (owner credential).

func (g *Gateway) createWebhook(w http.ResponseWriter, r *http.Request) {
	var in meshapi.CreateWebhookRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	res, err := g.client.CreateWebhook(r.Context(), in)
	if err == nil {
		// The answer carries the signing secret, shown this once.
		w.Header().Set("Cache-Control", "no-store")
	}
	g.reply(w, r, http.StatusCreated, res, err)
}

func (g *Gateway) listWebhooks(w http.ResponseWriter, r *http.Request) {
	l, err := g.client.ListWebhooks(r.Context())
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) getWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := g.client.GetWebhook(r.Context(), r.PathValue("webhookId"))
	g.reply(w, r, http.StatusOK, wh, err)
}

func (g *Gateway) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := g.client.DeleteWebhook(r.Context(), r.PathValue("webhookId")); err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) listDeliveries(w http.ResponseWriter, r *http.Request) {
	l, err := g.client.ListDeliveries(r.Context(), meshapi.ListDeliveriesRequest{
		WebhookID: r.PathValue("webhookId"), State: r.URL.Query().Get("state"),
	})
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) redriveDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := g.client.RedriveDelivery(r.Context(), meshapi.RedriveRequest{
		WebhookID: r.PathValue("webhookId"), DeliveryID: r.PathValue("deliveryId"),
	})
	g.reply(w, r, http.StatusOK, d, err)
}
