// Package httpapi is Padlock's HTTP transport: every route of the wire contract
// (docs/spec/padlock-wire.md) over net/http, translating requests into locker.Service calls and
// refusals into the contract's exact status codes and bodies. The same http.Handler is
// served by lockerd on one machine and by the pads Lambda behind API Gateway.
//
// It owns three things the domain must not: body caps applied to the bytes actually
// received (never trusting Content-Length; bodyless routes never read the body), the three
// error-body shapes, and the one function that maps refusals to statuses (errors.go): the
// pad service's and the payment rail's. Request URLs are never logged, because a read ticket may travel in the query string.
package httpapi
