package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/payment"
)

// kindStatus maps the pad service's refusal kinds to HTTP statuses and wire codes.
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

// paymentStatus is the payment path's part of the mapping (docs/spec/padlock-wire.md §1.2 and
// §4): the typed refusals of the payment rail (internal/payment) and a receipt that
// already paid for a pad, answered with error shape 2 or the 402 challenge. ok is false
// for any other error.
func paymentStatus(err error, h http.Header) (status int, body any, ok bool) {
	var req *payment.RequiredError
	var rej *payment.Rejection
	switch {
	case errors.As(err, &req):
		h.Set("WWW-Authenticate", req.Terms.WWWAuthenticate())
		return http.StatusPaymentRequired, req.Terms.Challenge(), true
	case errors.Is(err, payment.ErrInvalidProof):
		return http.StatusBadRequest, plainError{Detail: "payment verification failed: " + payment.ErrInvalidProof.Error()}, true
	case errors.Is(err, locker.ErrRedeemed):
		return http.StatusConflict, plainError{Detail: "payment already redeemed"}, true
	case errors.As(err, &rej):
		return http.StatusPaymentRequired, plainError{Detail: rej.Error()}, true
	case errors.Is(err, payment.ErrUnconfigured):
		return http.StatusInternalServerError, plainError{Detail: payment.ErrUnconfigured.Error()}, true
	case errors.Is(err, payment.ErrUnreachable):
		return http.StatusBadGateway, plainError{Detail: payment.ErrUnreachable.Error()}, true
	}
	return 0, nil, false
}

// writeError answers err: the one function that maps errors to statuses. Refusals get
// their status and exact detail (kindStatus; paymentStatus on the payment path); anything
// else is an internal error whose text is logged, never returned.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if status, body, ok := paymentStatus(err, w.Header()); ok {
		writeJSON(w, status, body)
		return
	}
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

// WriteBadRequest answers what could not be read as a request at all — a Lambda event that
// is not a well-formed API Gateway request (functions/pads) — with 400 and error shape 1,
// {"error":"bad_request","detail":detail}, as the pad routes refuse a bad request. detail
// must say what is wrong without quoting the event: an event carries write keys and tickets.
func WriteBadRequest(w http.ResponseWriter, detail string) {
	ks := kindStatus[locker.KindBadRequest]
	writeJSON(w, ks.status, structuredError{Error: ks.code, Detail: detail})
}
