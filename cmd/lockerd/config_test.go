package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/cli"
)

// runLockerd runs lockerd in-process with env as its environment, for at most 5 s (a daemon
// that starts when it should have refused is stopped, and exits 0).
func runLockerd(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	code = cli.Run(ctx, newRoot(e), args, e)
	return code, out.String(), errb.String()
}

// TestRefusedConfiguration: a configuration lockerd cannot serve is refused at start, every
// problem named, exit 1 (the Padlock wire contract's code for a refused LOCKER_MODE) —
// among them txid mode without the wallet, which would otherwise start and answer every
// create 500.
func TestRefusedConfiguration(t *testing.T) {
	db := filepath.Join(t.TempDir(), "locker.db")
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"unknown mode", map[string]string{"LOCKER_MODE": "free"}, []string{`LOCKER_MODE="free" is not a mode`}},
		{"txid without wallet", map[string]string{"LOCKER_MODE": "txid"},
			[]string{"refusing to start: LOCKER_MODE=txid needs PAYMENT_WALLET_ADDRESS, the 0x address every create must pay: set it, or use LOCKER_MODE=open"}},
		{"x402 alias without wallet", map[string]string{"LOCKER_MODE": "x402"}, []string{"needs PAYMENT_WALLET_ADDRESS"}},
		{"every problem at once", map[string]string{"LOCKER_MODE": "txid", "PAYMENT_WALLET_ADDRESS": "0x12", "LOCKER_MAX_CONNS": "0"},
			[]string{"PAYMENT_WALLET_ADDRESS=\"0x12\"", "LOCKER_MAX_CONNS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["LOCKER_DB_PATH"] = db
			code, out, errs := runLockerd(t, tc.env, "--port", "0")
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

// TestBadFlagValue: a flag's value that cannot be served is a usage error (exit 2) that
// names the flag, not the environment variable it stands for.
func TestBadFlagValue(t *testing.T) {
	for _, port := range []string{"99999", "-1", "65536"} {
		code, out, errs := runLockerd(t, map[string]string{"LOCKER_DB_PATH": filepath.Join(t.TempDir(), "locker.db")}, "--port", port)
		if code != 2 || out != "" || !strings.Contains(errs, "--port "+port+": a port is from 0 to 65535") || strings.Contains(errs, "LOCKER_PORT") {
			t.Errorf("--port %s: exit %d, stdout %q, stderr %q; want exit 2 naming --port", port, code, out, errs)
		}
	}
	code, _, errs := runLockerd(t, map[string]string{"LOCKER_PORT": "99999"})
	if code != 1 || !strings.Contains(errs, "LOCKER_PORT") {
		t.Errorf("LOCKER_PORT=99999: exit %d, stderr %q; want the refused configuration (1) naming LOCKER_PORT", code, errs)
	}
}

// TestListenHints: a daemon that cannot listen says which setting to change: the port when
// it is taken, the host when it is not an address of this machine.
func TestListenHints(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	db := map[string]string{"LOCKER_DB_PATH": filepath.Join(t.TempDir(), "locker.db")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", port}, "address already in use (choose another port with LOCKER_PORT or --port; 0 picks a free one)"},
		{[]string{"--host", "192.0.2.1", "--port", "0"}, "(choose an address of this machine with LOCKER_HOST or --host, such as 127.0.0.1)"},
	} {
		code, _, errs := runLockerd(t, db, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestVersion: lockerd has the version command and flag of every binary (docs/cli.md).
func TestVersion(t *testing.T) {
	_, line, _ := runLockerd(t, nil, "version")
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, out, errs := runLockerd(t, nil, args...); code != 0 || out != line || !strings.HasPrefix(out, "lockerd ") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if code, out, _ := runLockerd(t, nil, "version", "--json"); code != 0 || !strings.Contains(out, `"name": "lockerd"`) {
		t.Errorf("version --json: exit %d, %s", code, out)
	}
}
