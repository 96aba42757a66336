package approvalsapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// errRoute is a request for no route of the API.
var errRoute = errors.New("not found")

// writeErr is the one error-to-status mapping of the approvals API. Internal errors are
// logged and answered with a generic message and the request ID.
func (h *Handler) writeErr(rw http.ResponseWriter, r *http.Request, err error) {
	reqID := h.caller(r).RequestID
	status, msg := http.StatusInternalServerError, "internal error (request "+reqID+")"
	switch {
	case errors.Is(err, errRoute), errors.Is(err, warrant.ErrNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, warrant.ErrForbidden), errors.Is(err, warrant.ErrSeparation):
		status, msg = http.StatusForbidden, err.Error()
	case errors.Is(err, warrant.ErrSuspicious):
		status, msg = http.StatusConflict, err.Error()+"; read the diff and pass acceptSuspicious to decide anyway (recorded)"
	case errors.Is(err, warrant.ErrConflict):
		status, msg = http.StatusConflict, err.Error()
	case errors.Is(err, warrant.ErrInvalid):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, warrant.ErrUnavailable), errors.Is(err, signer.ErrUnavailable):
		rw.Header().Set("Retry-After", "5")
		status, msg = http.StatusServiceUnavailable, "temporarily unavailable; nothing was recorded; retry: "+err.Error()
	}
	if status >= 500 {
		h.log.ErrorContext(r.Context(), "approvals request failed", slog.String("path", r.URL.Path), slog.Int("status", status), slog.String("error", err.Error()), slog.String("request_id", reqID))
	}
	writeJSON(rw, status, map[string]string{"error": msg})
}
