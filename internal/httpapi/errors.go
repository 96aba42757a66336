package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// kindStatus is the one mapping from domain refusals to HTTP statuses and wire codes.
var kindStatus = map[locker.Kind]struct {
	status int
	code   string
}{
	locker.KindBadRequest:    {http.StatusBadRequest, "bad_request"},
	locker.KindUnauthorized:  {http.StatusUnauthorized, "unauthorized"},
	locker.KindForbidden:     {http.StatusForbidden, "forbidden"},
	locker.KindNotFound:      {http.StatusNotFound, "not_found"},
	locker.KindConflict:      {http.StatusConflict, "conflict"},
	locker.KindInconsistent:  {http.StatusConflict, "inconsistent_pad"},
	locker.KindGone:          {http.StatusGone, "gone"},
	locker.KindTooLarge:      {http.StatusRequestEntityTooLarge, "payload_too_large"},
	locker.KindUnprocessable: {http.StatusUnprocessableEntity, "unprocessable"},
	locker.KindUnavailable:   {http.StatusServiceUnavailable, "unavailable"},
}

// structuredError is error shape 1: {"error": code, "detail": text}.
type structuredError struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

// plainError is error shape 2: {"detail": text}, used on the payment path and for routing.
type plainError struct {
	Detail string `json:"detail"`
}

// writeError answers err. Refusals get their status and exact detail; anything else is an
// internal error whose text is logged, never returned.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if ref, ok := locker.AsError(err); ok {
		ks := kindStatus[ref.Kind]
		if ks.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
			a.log.WarnContext(r.Context(), "store unavailable", slog.String("request_id", requestID(r)), slog.String("error", err.Error()))
		}
		writeJSON(w, ks.status, structuredError{Error: ks.code, Detail: ref.Detail})
		return
	}
	if errors.Is(err, errClientGone) {
		return
	}
	a.log.ErrorContext(r.Context(), "internal error", slog.String("request_id", requestID(r)), slog.String("error", err.Error()))
	writeJSON(w, http.StatusInternalServerError, structuredError{Error: "internal", Detail: "internal error (request " + requestID(r) + ")"})
}
