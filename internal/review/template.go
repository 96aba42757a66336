package review

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var (
	//go:embed assets/page.html
	pageFile string
	//go:embed assets/review.css
	cssFile []byte
	//go:embed assets/review.js
	jsFile []byte
)

// cardCtx is what the card template sees: the card and the page it is on.
type cardCtx struct {
	P *Page
	C Card
}

// staticHead is the head of the exported report: its own CSP, pinned to the hash of the
// stylesheet inlined after it (no script at all). The one template.HTML of the package,
// built from embedded assets only, never from upstream text.
var staticHead = func() template.HTML {
	sum := sha256.Sum256(cssFile)
	csp := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; img-src 'none'; form-action 'none'; base-uri 'none'"
	return template.HTML(`<meta http-equiv="Content-Security-Policy" content="` + csp + `">` + "\n<style>" + string(cssFile) + "</style>") //nolint:gosec // embedded assets only
}()

var pageTemplate = template.Must(template.New("review").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"short": func(d warrant.Digest) string { return d.Short() },
	"head":  func(h warrant.AuditHead) string { return strconv.FormatInt(h.Seq, 10) + ":" + h.Hash },
	"wrap":  func(p *Page, c Card) cardCtx { return cardCtx{P: p, C: c} },
	"arg":   arg,
	"staticHead": func() template.HTML {
		return staticHead
	},
}).Parse(pageFile))

// WriteReport writes the review page of src as one self-contained HTML file: the same
// view (pending and drifted tools, graded diffs, schema trees, badges, look-alike
// letters, canonical definitions), without forms or script, its stylesheet inline under
// a CSP that allows nothing else. where says what was read (shown in its header).
func WriteReport(ctx context.Context, w io.Writer, src Source, where string, now time.Time) (*Page, error) {
	s, err := read(ctx, src)
	if err != nil {
		return nil, err
	}
	p := build(s)
	p.Static, p.Where, p.At = true, where, now.UTC()
	return p, pageTemplate.ExecuteTemplate(w, "page", p)
}
