package review

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// BulkApprover is a [Source] that can approve a server's routine first-sight tools with
// one signed statement (warrant.Service.ApproveAllAs). The page offers the bulk form only
// for a source that implements it.
type BulkApprover interface {
	// ApproveAll records one bulk approval over req.ReadHead (never nil here): ErrStale
	// when the log moved since, ErrNotBulk for a tool that is not routine now.
	ApproveAll(ctx context.Context, req warrant.BulkRequest) (BulkOutcome, error)
}

// BulkOutcome is what a recorded bulk approval answered.
type BulkOutcome struct {
	Decider string
	// Approved is the number of tools approved; Head the audit head after them.
	Approved int
	Head     warrant.AuditHead
}

// ApproveAll calls warrant.Service.ApproveAllAs with the attester, which must attest
// bulk statements (trust.SSHAttester does).
func (s ServiceSource) ApproveAll(ctx context.Context, req warrant.BulkRequest) (BulkOutcome, error) {
	att, ok := s.Attester.(warrant.BulkAttester)
	if !ok {
		return BulkOutcome{}, ErrReadOnly
	}
	if req.ReadHead == nil {
		return BulkOutcome{}, errors.New("review: a bulk approval from the page names the head it was rendered from")
	}
	res, err := s.Service.ApproveAllAs(ctx, req, att)
	if err != nil {
		return BulkOutcome{}, err
	}
	return BulkOutcome{Decider: res.Decisions[0].Actor, Approved: len(res.Decisions), Head: res.AuditHead}, nil
}

var _ BulkApprover = ServiceSource{}

// BulkView is one server's routine first-sight tools, offered for one signature: pending,
// never approved, graded new-tool and nothing else, no first-sight finding, no
// suspicious text. Items are at most warrant.MaxBulk of them; More counts the rest.
type BulkView struct {
	Server    Text
	ServerArg string
	Items     []BulkItemView
	More      int
}

// BulkItemView is one tool of a bulk form.
type BulkItemView struct {
	Tool   Text
	Digest warrant.Digest
	// Value is the form value: the tool's argument form and the digest.
	Value string
}

// routine reports whether a card is a routine first-sight tool (what BulkCandidates
// offers; the use case checks again at the write).
func routine(c Card) bool {
	return c.Decidable && c.Approved == "" && c.New && !c.Suspicious && len(c.Flags) == 0 && len(c.FirstSight) == 0 &&
		slices.Equal(c.Rules, []string{string(warrant.RuleNewTool)})
}

// bulkViews builds the bulk forms from the cards, by server in the order of the cards.
func bulkViews(cards []Card) []BulkView {
	var out []BulkView
	at := map[string]int{}
	for _, c := range cards {
		if !routine(c) {
			continue
		}
		i, ok := at[c.server]
		if !ok {
			i = len(out)
			at[c.server] = i
			out = append(out, BulkView{Server: c.Server, ServerArg: c.ServerArg})
		}
		if len(out[i].Items) == warrant.MaxBulk {
			out[i].More++
			continue
		}
		out[i].Items = append(out[i].Items, BulkItemView{Tool: c.Tool, Digest: c.Current, Value: c.ToolArg + " " + string(c.Current)})
	}
	for i := range out {
		slices.SortFunc(out[i].Items, func(a, b BulkItemView) int { return strings.Compare(a.Value, b.Value) })
	}
	return out
}

// parseBulk reads a bulk form: the server, the items, the head, the note.
func parseBulk(r *http.Request) (server string, items []warrant.BulkItem, head warrant.AuditHead, note string, err error) {
	f := r.PostForm
	if server, err = unarg(f.Get("server")); err != nil || server == "" {
		return "", nil, head, "", fmt.Errorf("%w: the form names no server", warrant.ErrInvalid)
	}
	vals := f["item"]
	if len(vals) == 0 || len(vals) > warrant.MaxBulk {
		return server, nil, head, "", fmt.Errorf("%w: a bulk approval names 1 to %d tools, not %d", warrant.ErrInvalid, warrant.MaxBulk, len(vals))
	}
	for _, v := range vals {
		a, d, ok := strings.Cut(v, " ")
		tool, uerr := unarg(a)
		dg, derr := warrant.ParseDigest(d)
		if !ok || uerr != nil || tool == "" || derr != nil {
			return server, nil, head, "", fmt.Errorf("%w: an item of the form is not a tool and its digest", warrant.ErrInvalid)
		}
		items = append(items, warrant.BulkItem{Tool: tool, Digest: dg})
	}
	slices.SortFunc(items, func(a, b warrant.BulkItem) int { return strings.Compare(a.Tool, b.Tool) })
	seq, hash, ok := strings.Cut(f.Get("head"), ":")
	n, perr := strconv.ParseInt(seq, 10, 64)
	if !ok || perr != nil || n < 0 || len(hash) != 64 {
		return server, nil, head, "", fmt.Errorf("%w: the form names no audit head", warrant.ErrInvalid)
	}
	note = strings.TrimSpace(f.Get("note"))
	if len(note) > 1000 {
		return server, nil, head, "", fmt.Errorf("%w: the note is longer than 1000 bytes", warrant.ErrInvalid)
	}
	return server, items, warrant.AuditHead{Seq: n, Hash: hash}, note, nil
}

// approveAll records a bulk approval: a POST from the page itself (Origin), with its
// CSRF token, over the head the page was rendered from, naming exactly the tools its
// form listed.
func (h *Handler) approveAll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !h.pageForm(w, r) {
		return
	}
	bulk, ok := h.src.(BulkApprover)
	if h.decider == "" || !ok {
		h.refused(w, r, ErrReadOnly, decision{})
		return
	}
	server, items, readHead, note, err := parseBulk(r)
	if err != nil {
		h.refused(w, r, err, decision{})
		return
	}
	d := decision{server: server, head: readHead}
	head, _, err := h.src.Tools(ctx)
	if err != nil {
		h.refused(w, r, err, decision{})
		return
	}
	if head != readHead {
		h.stale(w, r, d, fmt.Errorf("%w: the audit log moved on since the page was rendered (it was at %d, it is now at %d)", warrant.ErrStale, readHead.Seq, head.Seq))
		return
	}
	out, err := bulk.ApproveAll(ctx, warrant.BulkRequest{Server: server, Items: items, Note: note, ReadHead: &readHead})
	if errors.Is(err, warrant.ErrConflict) || errors.Is(err, warrant.ErrStale) {
		h.stale(w, r, d, err)
		return
	}
	if err != nil {
		h.refused(w, r, err, decision{})
		return
	}
	h.log.InfoContext(ctx, "review: bulk approval recorded", slog.String("server", server), slog.Int("tools", out.Approved),
		slog.String("by", out.Decider), slog.Int64("entry", out.Head.Seq))
	b := &Banner{Kind: "ok", Title: fmt.Sprintf("Recorded: %d approvals in one signed statement", out.Approved),
		Message: textOf(fmt.Sprintf("approved %d tools of %s as %s, audit entries %d to %d.", out.Approved, server, out.Decider, readHead.Seq+1, out.Head.Seq))}
	b.Detail = append(b.Detail, fmt.Sprintf("The signed statement names exactly the %d tools and digests the form listed and the audit head %d:%s this page was rendered from.", out.Approved, readHead.Seq, readHead.Hash))
	b.Detail = append(b.Detail, fmt.Sprintf("Check it without toolwarrant: toolwarrant audit statement %d --out DIR, then the ssh-keygen -Y verify command it prints.", out.Head.Seq))
	b.Detail = append(b.Detail, fmt.Sprintf("Audit head now: %d:%s", out.Head.Seq, out.Head.Hash))
	id := h.keep(b)
	http.Redirect(w, r, "/?r="+id, http.StatusSeeOther)
}
