package lockerclient

import (
	"net"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The default transport's connections ask for ReceiveBuffer: Linux reports twice what
// was granted (its bookkeeping share), and grants at most net.core.rmem_max.
func TestDialAsksForReceiveBuffer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1))
		}
	}()
	c, err := dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := ReceiveBuffer
	if b, err := os.ReadFile("/proc/sys/net/core/rmem_max"); err == nil {
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			want = min(want, max)
		}
	}
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var serr error
	if err := raw.Control(func(fd uintptr) { got, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if got != 2*want {
		t.Fatalf("SO_RCVBUF = %d, want %d (twice the %d asked for)", got, 2*want, want)
	}
	// The client's own transport dials this way.
	cl, err := New(Config{BaseURL: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if tr, ok := cl.hc.Transport.(*http.Transport); !ok || reflect.ValueOf(tr.DialContext).Pointer() != reflect.ValueOf(dial).Pointer() {
		t.Fatal("the default transport does not dial with dial")
	}
}
