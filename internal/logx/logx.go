// Package logx builds the slog loggers of every binary: JSON when the output is not a
// terminal (Lambda, containers, files), text on a terminal, at a configured level.
package logx

import (
	"io"
	"log/slog"
	"os"
)

// New returns a logger writing to w at level.
func New(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return slog.New(slog.NewTextHandler(w, opts))
		}
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
