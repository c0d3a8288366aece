package gateway

import (
	"net/http"
	"runtime"

	"github.com/a2amesh/a2amesh/internal/downloads"
	"github.com/a2amesh/a2amesh/mesh"
)

// downloadRoutes serve the install script and the programs it fetches (no
// credential: they are the public software a laptop installs).
func (g *Gateway) downloadRoutes(mux *http.ServeMux) {
	catalog := downloads.New(g.cfg.DownloadsDir).WithOwn(g.cfg.OwnProgramsDir, runtime.GOOS, runtime.GOARCH)
	g.handle(mux, "GET /install.sh", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		script, err := catalog.Script(g.publicURL)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/x-shellscript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(script)
	}))
	g.handle(mux, "GET /downloads/{file}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if !catalog.ServeFile(w, r, name) {
			g.writeError(w, r, mesh.Errorf(mesh.CodeNotFound, "%q is not offered here; the platform's operator builds the programs with make dist", name))
		}
	}))
}
