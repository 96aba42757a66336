package witness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server timeouts: a request is a few kilobytes and is answered at once.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 5 * time.Second
)

// Listen listens on addr (host:port; port 0 picks a free one). It reports whether the
// address is loopback: anything else is reachable from the network, without TLS.
func Listen(addr string) (net.Listener, bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, fmt.Errorf("--addr %q: %v", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	return ln, isLoopback(host), err
}

// isLoopback reports whether host names the loopback interface.
func isLoopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == "localhost"
}

// Serve serves h on ln until ctx is done, then shuts down gracefully: requests in flight
// finish (within a few seconds) and nothing new is accepted.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout,
		IdleTimeout: idleTimeout, MaxHeaderBytes: 16 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
