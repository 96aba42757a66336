// Package setting is the one rule for a client's or a service's setting left unset: a
// number that is zero or negative and a nil logger take their defaults. (A string left
// empty is cmp.Or's.) Standard library only, so that any layer may use it.
package setting

import "log/slog"

// Positive returns v, or def when v is zero or negative.
func Positive[T ~int | ~int32 | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Logger returns l, or a logger that discards everything when l is nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
