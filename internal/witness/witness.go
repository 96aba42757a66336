package witness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

// MaxBodyBytes bounds an add-checkpoint request: 63 proof lines and a checkpoint with its
// signatures take a few kilobytes.
const MaxBodyBytes = 64 << 10

// maxProofLines is tlog-witness's bound on consistency proof lines.
const maxProofLines = 63

// MaxTextBytes bounds a checkpoint's text (origin, size, root and extension lines): the
// state keeps the latest of every log.
const MaxTextBytes = 8 << 10

// Config configures New.
type Config struct {
	// State is the witness's state file. Required.
	State *File
	// Cosigner is the witness's key; its verifier key must be the state's. Required.
	Cosigner *checkpoint.Cosigner
	// Logger receives one line per request refused or cosigned. Default: discard.
	Logger *slog.Logger
}

// Witness serves c2sp.org/tlog-witness: POST /add-checkpoint and GET /<origin hash>/checkpoint.
type Witness struct {
	state *File
	cs    *checkpoint.Cosigner
	log   *slog.Logger
	mux   *http.ServeMux
}

// New returns the witness of cfg.State, signing with cfg.Cosigner.
func New(cfg Config) (*Witness, error) {
	if cfg.State == nil || cfg.Cosigner == nil {
		return nil, errors.New("witness: a state file and a key are required")
	}
	st, err := cfg.State.Read()
	if err != nil {
		return nil, err
	}
	if st.Name != cfg.Cosigner.Name() || st.VKey != cfg.Cosigner.VerifierKey() {
		return nil, fmt.Errorf("the key is not the witness key of %s (%s, verifier key %s); this key's is %s",
			cfg.State.Path, st.Name, st.VKey, cfg.Cosigner.VerifierKey())
	}
	w := &Witness{state: cfg.State, cs: cfg.Cosigner, log: cfg.Logger, mux: http.NewServeMux()}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.mux.HandleFunc("POST /add-checkpoint", w.serveAdd)
	w.mux.HandleFunc("GET /{origin}/checkpoint", w.serveCheckpoint)
	return w, nil
}

// ServeHTTP implements http.Handler.
func (w *Witness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Cache-Control", "no-store")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	w.mux.ServeHTTP(rw, r)
}

// Error is a refusal, with the HTTP status tlog-witness gives it.
type Error struct {
	Status int
	Reason string
	// Size is the size last cosigned, for a 409.
	Size int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Reason)
}

func refuse(status int, format string, a ...any) *Error {
	return &Error{Status: status, Reason: fmt.Sprintf(format, a...)}
}

func (w *Witness) serveAdd(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		w.answer(rw, r, "", refuse(http.StatusRequestEntityTooLarge, "the request is larger than %d bytes", MaxBodyBytes), nil)
		return
	}
	if err != nil {
		w.answer(rw, r, "", refuse(http.StatusBadRequest, "reading the request: %v", err), nil)
		return
	}
	_, rest, _ := bytes.Cut(body, []byte("\n\n"))
	origin, _, _ := strings.Cut(string(rest), "\n")
	if len(origin) > 200 {
		origin = origin[:200] + "…"
	}
	sigs, err := w.AddCheckpoint(r.Context(), body)
	w.answer(rw, r, origin, err, sigs)
}

func (w *Witness) answer(rw http.ResponseWriter, r *http.Request, origin string, err error, sigs []byte) {
	var e *Error
	switch {
	case err == nil:
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = rw.Write(sigs)
		return
	case errors.As(err, &e) && e.Status == http.StatusConflict:
		w.log.Info("add-checkpoint: old size is not the size last cosigned", "origin", origin, "status", e.Status, "size", e.Size)
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", e.Size)
		return
	case errors.As(err, &e):
	case errors.Is(err, ErrLocked), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e = refuse(http.StatusServiceUnavailable, "the witness is busy; try again")
	default:
		w.log.Error("add-checkpoint failed", "origin", origin, "error", err)
		e = refuse(http.StatusInternalServerError, "the witness could not record the checkpoint")
	}
	w.log.Warn("add-checkpoint refused", "origin", origin, "status", e.Status, "reason", e.Reason, "remote", r.RemoteAddr)
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.WriteHeader(e.Status)
	fmt.Fprintln(rw, e.Reason)
}

// request is a parsed add-checkpoint body.
type request struct {
	old   int64
	proof tlog.TreeProof
	note  []byte
}

func parseRequest(body []byte) (*request, error) {
	head, noteBytes, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return nil, refuse(http.StatusBadRequest, "no blank line between the old size and proof lines and the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	sz, ok := strings.CutPrefix(lines[0], "old ")
	old, err := strconv.ParseInt(sz, 10, 64)
	if !ok || err != nil || old < 0 || strconv.FormatInt(old, 10) != sz {
		return nil, refuse(http.StatusBadRequest, "the first line must be \"old <size>\" in decimal, without leading zeroes")
	}
	if len(lines)-1 > maxProofLines {
		return nil, refuse(http.StatusBadRequest, "%d consistency proof lines, more than %d", len(lines)-1, maxProofLines)
	}
	req := &request{old: old, note: noteBytes}
	for i, l := range lines[1:] {
		h, err := tlog.ParseHash(l)
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "consistency proof line %d is not a base64 hash", i+1)
		}
		req.proof = append(req.proof, h)
	}
	return req, nil
}

// parseText parses a checkpoint's note text: origin, size, root hash, then any
// extension lines (non-empty).
func parseText(text string) (origin string, size int64, root tlog.Hash, err error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return "", 0, root, errors.New("the checkpoint has fewer than three lines (origin, size, root hash)")
	}
	size, err = strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return "", 0, root, fmt.Errorf("the checkpoint's size %q is not a decimal without leading zeroes", lines[1])
	}
	if root, err = tlog.ParseHash(lines[2]); err != nil {
		return "", 0, root, errors.New("the checkpoint's root hash is not 32 bytes of base64")
	}
	for _, l := range lines[3:] {
		if l == "" {
			return "", 0, root, errors.New("the checkpoint has an empty extension line")
		}
	}
	return lines[0], size, root, nil
}

// AddCheckpoint is add-checkpoint on a request body: it returns the cosignature lines, or
// an *Error with the status to answer (or another error: the state could not be read or
// written, a 500).
func (w *Witness) AddCheckpoint(ctx context.Context, body []byte) ([]byte, error) {
	req, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	origin, _, _ := strings.Cut(string(req.note), "\n")
	var sigs []byte
	err = w.state.Update(ctx, func(s *State) (bool, error) {
		l, ok := s.Logs[origin]
		if !ok {
			return false, refuse(http.StatusNotFound, "unknown log origin %q: the witness must be told it first (toolwarrant witness add-log)", origin)
		}
		lv, err := note.NewVerifier(l.VKey)
		if err != nil {
			return false, err
		}
		n, err := note.Open(req.note, note.VerifierList(lv))
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return false, refuse(http.StatusForbidden, "the checkpoint carries no signature by the key the witness trusts for %s", origin)
		case errors.As(err, &invalid):
			return false, refuse(http.StatusForbidden, "the signature of %s does not verify", origin)
		case err != nil:
			return false, refuse(http.StatusBadRequest, "the checkpoint is not a signed note: %v", err)
		}
		if len(n.Text) > MaxTextBytes {
			return false, refuse(http.StatusBadRequest, "the checkpoint's text is larger than %d bytes", MaxTextBytes)
		}
		o, size, root, err := parseText(n.Text)
		if err != nil {
			return false, refuse(http.StatusBadRequest, "%v", err)
		}
		if o != origin {
			return false, refuse(http.StatusBadRequest, "the checkpoint's origin line is %q", o)
		}
		if req.old > size {
			return false, refuse(http.StatusBadRequest, "old size %d is larger than the checkpoint's size %d", req.old, size)
		}
		if size == 0 && root != EmptyRoot {
			return false, refuse(http.StatusUnprocessableEntity, "a checkpoint of size 0 must have the empty tree's root hash")
		}
		if req.old != l.Size {
			return false, &Error{Status: http.StatusConflict, Reason: "old size is not the size last cosigned", Size: l.Size}
		}
		if req.old == 0 {
			if len(req.proof) != 0 {
				return false, refuse(http.StatusUnprocessableEntity, "a consistency proof from size 0 must be empty")
			}
		} else {
			known, err := l.root()
			if err != nil {
				return false, err
			}
			switch {
			case size == req.old && root != known:
				w.log.Warn("add-checkpoint: a fork, the log signed another root hash for the size last cosigned", "origin", origin, "size", size, "checkpoint", string(req.note))
				return false, refuse(http.StatusUnprocessableEntity, "the checkpoint of size %d has another root hash than the one cosigned before: a fork", size)
			case size == req.old && len(req.proof) != 0:
				return false, refuse(http.StatusUnprocessableEntity, "a consistency proof between equal sizes must be empty")
			case tlog.CheckTree(req.proof, size, root, req.old, known) != nil:
				w.log.Warn("add-checkpoint: a consistency proof that does not verify", "origin", origin, "old", req.old, "size", size, "checkpoint", string(req.note))
				return false, refuse(http.StatusUnprocessableEntity, "the consistency proof from size %d to %d does not verify against the checkpoint cosigned before", req.old, size)
			}
		}
		signed, err := note.Sign(&note.Note{Text: n.Text}, cosignCtx{w.cs, ctx})
		if err != nil {
			return false, err
		}
		i := bytes.LastIndex(signed, []byte("\n\n"))
		sigs = signed[i+2:]
		var logSigs strings.Builder
		for _, sg := range n.Sigs {
			logSigs.WriteString("— " + sg.Name + " " + sg.Base64 + "\n")
		}
		l.Size, l.Root = size, root.String()
		l.Checkpoint = n.Text + "\n" + logSigs.String() + string(sigs)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	w.log.Info("add-checkpoint: cosigned", "origin", origin, "old", req.old)
	return sigs, nil
}

// cosignCtx signs with the request's context.
type cosignCtx struct {
	*checkpoint.Cosigner
	ctx context.Context
}

func (c cosignCtx) Sign(msg []byte) ([]byte, error) { return c.SignContext(c.ctx, msg) }

func (w *Witness) serveCheckpoint(rw http.ResponseWriter, r *http.Request) {
	want := r.PathValue("origin")
	st, err := w.state.Read()
	if err != nil {
		w.log.Error("read the witness state", "error", err)
		http.Error(rw, "the witness could not read its state", http.StatusInternalServerError)
		return
	}
	for origin, l := range st.Logs {
		if OriginHash(origin) == want && l.Checkpoint != "" {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(rw, l.Checkpoint)
			return
		}
	}
	http.Error(rw, "the witness has cosigned no checkpoint of that log", http.StatusNotFound)
}
