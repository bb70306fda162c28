// Package console serves the support console at /console: a page of plain
// browser JavaScript, embedded in the binary, that calls the admin API with
// the key the user signs in with. It serves no data itself, so it needs no
// authentication of its own.
package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// Policy is the Content-Security-Policy of every console response: the
// page's own scripts and styles only, no inline code, no framing, and API
// calls to its own origin.
const Policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// Config is what the page is told about its surroundings.
type Config struct {
	// TemporalUIURL is the base URL of the Temporal Web UI that deliveries
	// link to (their workflow's history); empty shows no links.
	TemporalUIURL string
	// TemporalNamespace is the namespace of the delivery workflows.
	TemporalNamespace string
}

// Handler serves the console under prefix ("/console"): prefix + "/" is the
// page, prefix + "/<name>" the page's assets.
type Handler struct {
	prefix string
	index  []byte
	assets fs.FS
}

// New renders the page for cfg.
func New(prefix string, cfg Config) (*Handler, error) {
	assets, err := fs.Sub(static, "static")
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	tmpl, err := template.ParseFS(assets, "index.html")
	if err != nil {
		return nil, fmt.Errorf("console page: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, cfg); err != nil {
		return nil, fmt.Errorf("console page: %w", err)
	}
	return &Handler{prefix: prefix, index: b.Bytes(), assets: assets}, nil
}

// ServeHTTP answers GET and HEAD of the page and its assets; anything else
// under the prefix is a 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", Policy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, h.prefix)
	switch {
	case !ok:
		http.NotFound(w, r)
	case name == "":
		http.Redirect(w, r, h.prefix+"/", http.StatusMovedPermanently)
	case name == "/" || name == "/index.html":
		hd.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(h.index)
	default:
		h.asset(w, r, strings.TrimPrefix(name, "/"))
	}
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	if !fs.ValidPath(name) || path.Ext(name) == "" {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(h.assets, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(b)
}
