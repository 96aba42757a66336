package locker

import "fmt"

// Kind classifies a refusal of the Service. Transports map each kind to one status in one
// place (httpapi/errors.go); the domain never names a status code.
type Kind uint8

// Refusal kinds, one per wire error code of the contract.
const (
	KindBadRequest    Kind = iota + 1 // bad_request: empty payload, invalid envelope
	KindUnauthorized                  // unauthorized: write key or read ticket missing or wrong
	KindForbidden                     // forbidden: read lease over
	KindNotFound                      // not_found: unknown pad
	KindConflict                      // conflict: sealed pad, quota, lost race
	KindInconsistent                  // inconsistent_pad: seal-time audit failed
	KindGone                          // gone: write window over
	KindTooLarge                      // payload_too_large: block, body or slice too big
	KindUnprocessable                 // unprocessable: body fails the schema, bad range
	KindUnavailable                   // the store is unavailable; retry later
)

// Error is a refusal with the contract's exact detail text. Details never contain secrets.
type Error struct {
	Kind   Kind
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func refuse(k Kind, format string, a ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, a...)}
}

// Refusals with fixed texts (docs/spec/padlock-wire.md §1.2).
var (
	errPadNotFound     = &Error{KindNotFound, "pad not found"}
	errInvalidWriteKey = &Error{KindUnauthorized, "invalid write key"}
	errMissingTicket   = &Error{KindUnauthorized, "missing read ticket"}
	errInvalidTicket   = &Error{KindUnauthorized, "invalid read ticket"}
	errLeaseExpired    = &Error{KindForbidden, "read ticket lease expired"}
	errSealed          = &Error{KindConflict, "pad is sealed"}
	errExpired         = &Error{KindGone, "pad is expired"}
	errBlockQuota      = &Error{KindConflict, "block quota exceeded"}
	errByteQuota       = &Error{KindConflict, "byte quota exceeded"}
	errEmptyPayload    = &Error{KindBadRequest, "empty payload"}
	errRange           = &Error{KindUnprocessable, "invalid from/to range"}
	errBusy            = &Error{KindConflict, "pad changed while writing; retry the request"}
	errUnavailable     = &Error{KindUnavailable, "storage temporarily unavailable; retry later"}
	// ErrInvalidBody is the refusal of a create or tickets body that is not valid.
	ErrInvalidBody = &Error{KindUnprocessable, "invalid request body"}
	// ErrBlockTooLarge is the refusal of a block payload over MaxBlockBytes.
	ErrBlockTooLarge = &Error{KindTooLarge, fmt.Sprintf("payload exceeds %d bytes", MaxBlockBytes)}
	// ErrBodyTooLarge is the refusal of a JSON body over MaxJSONBodyBytes.
	ErrBodyTooLarge = &Error{KindTooLarge, fmt.Sprintf("request body exceeds %d bytes", MaxJSONBodyBytes)}
)
