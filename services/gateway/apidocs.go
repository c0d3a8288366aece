package gateway

import (
	"net/http"
	"slices"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/schemas"
)

// apiDocRoutes serves the documents of schemas/ as they are embedded in the
// program, to anyone: the OpenAPI document of this API at /openapi.json,
// the AsyncAPI document of the bus at /asyncapi.json, and every file below
// /schemas/ (the JSON Schema of each event's data, which events name in
// their dataschema attribute, the envelope and the shared definitions).
func (g *Gateway) apiDocRoutes(mux *http.ServeMux) {
	g.handle(mux, "GET /openapi.json", apiDoc(schemas.OpenAPIFile))
	g.handle(mux, "GET /asyncapi.json", apiDoc(schemas.AsyncAPIFile))
	g.handle(mux, "GET /schemas/{file}", http.HandlerFunc(g.schemaFile))
	g.handle(mux, "GET /schemas/events/{file}", http.HandlerFunc(g.schemaFile))
}

// apiDoc serves one embedded document.
func apiDoc(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeDoc(w, r, name) })
}

// schemaFile serves /schemas/<path>: only the files schemas/ publishes.
func (g *Gateway) schemaFile(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path[len("/schemas/"):]
	if !slices.Contains(schemas.Files(), name) {
		g.writeError(w, r, mesh.Errorf(mesh.CodeNotFound, "no schema %s", name))
		return
	}
	writeDoc(w, r, name)
}

func writeDoc(w http.ResponseWriter, r *http.Request, name string) {
	b, err := schemas.File(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(b)
}
