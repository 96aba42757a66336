package evmrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const secretPath = "/v2/SECRET-API-KEY"

// rpcServer answers every request with reply(req), where req is the decoded request.
func rpcServer(t *testing.T, reply func(w http.ResponseWriter, req map[string]any)) (*Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != secretPath || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request shape", http.StatusTeapot)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad json", http.StatusTeapot)
			return
		}
		reply(w, req)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{URL: srv.URL + secretPath + "?key=SECRET-QUERY", ReceiptTimeout: 300 * time.Millisecond,
		ChainIDTimeout: 200 * time.Millisecond, MaxResponseBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	return c, &calls
}

// answer writes a JSON-RPC response echoing the request id.
func answer(w http.ResponseWriter, req map[string]any, fields string) {
	id, _ := json.Marshal(req["id"])
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+fields+`}`)
}

func TestChainID(t *testing.T) {
	tests := []struct {
		name    string
		fields  string
		want    uint64
		wantErr error
	}{
		{name: "base", fields: `,"result":"0x2105"`, want: 8453},
		{name: "one", fields: `,"result":"0x1"`, want: 1},
		{name: "number not string", fields: `,"result":8453`, wantErr: ErrMalformed},
		{name: "decimal string", fields: `,"result":"8453"`, wantErr: ErrMalformed},
		{name: "empty quantity", fields: `,"result":"0x"`, wantErr: ErrMalformed},
		{name: "too long", fields: `,"result":"0x10000000000000000"`, wantErr: ErrMalformed},
		{name: "null", fields: `,"result":null`, wantErr: ErrMalformed},
		{name: "no result", fields: ``, wantErr: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := rpcServer(t, func(w http.ResponseWriter, req map[string]any) {
				if req["method"] != "eth_chainId" || req["jsonrpc"] != "2.0" {
					http.Error(w, "wrong method", http.StatusTeapot)
					return
				}
				answer(w, req, tc.fields)
			})
			got, err := c.ChainID(t.Context())
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ChainID err = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ChainID = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTransactionReceipt(t *testing.T) {
	hash := "0x" + strings.Repeat("ab", 32)
	c, _ := rpcServer(t, func(w http.ResponseWriter, req map[string]any) {
		params, _ := req["params"].([]any)
		if req["method"] != "eth_getTransactionReceipt" || len(params) != 1 {
			http.Error(w, "wrong call", http.StatusTeapot)
			return
		}
		if params[0] == hash {
			answer(w, req, `,"result":{"status":"0x1","logs":[]}`)
			return
		}
		answer(w, req, `,"result":null`)
	})
	got, err := c.TransactionReceipt(t.Context(), hash)
	if err != nil || string(got) != `{"status":"0x1","logs":[]}` {
		t.Errorf("receipt = %s, %v", got, err)
	}
	got, err = c.TransactionReceipt(t.Context(), "0x"+strings.Repeat("00", 32))
	if err != nil || string(got) != "null" {
		t.Errorf("unknown receipt = %s, %v; want the literal null", got, err)
	}
}

// TestFailures covers every way a provider can fail. Each is classified, none leaks the URL,
// its path or query, and each returns within its timeout.
func TestFailures(t *testing.T) {
	big := `,"result":"` + strings.Repeat("a", 5000) + `"`
	tests := []struct {
		name    string
		reply   func(w http.ResponseWriter, req map[string]any)
		wantErr error
	}{
		{name: "json-rpc error", reply: func(w http.ResponseWriter, req map[string]any) {
			answer(w, req, `,"error":{"code":-32000,"message":"header not found\nFAKE LOG LINE at `+secretPath+`"}`)
		}},
		{name: "http 500", reply: func(w http.ResponseWriter, req map[string]any) {
			http.Error(w, `{"message":"internal at `+secretPath+`"}`, http.StatusInternalServerError)
		}, wantErr: ErrTransport},
		{name: "http 429", reply: func(w http.ResponseWriter, req map[string]any) {
			w.WriteHeader(http.StatusTooManyRequests)
			answer(w, req, `,"error":{"code":-32005,"message":"rate limited"}`)
		}, wantErr: ErrTransport},
		{name: "redirect not followed", reply: func(w http.ResponseWriter, req map[string]any) {
			http.Redirect(w, &http.Request{Method: http.MethodPost}, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
		}, wantErr: ErrTransport},
		{name: "timeout", reply: func(w http.ResponseWriter, req map[string]any) {
			time.Sleep(time.Second)
			answer(w, req, `,"result":null`)
		}, wantErr: ErrTransport},
		{name: "not json", reply: func(w http.ResponseWriter, req map[string]any) {
			_, _ = io.WriteString(w, "<html>gateway</html>")
		}, wantErr: ErrMalformed},
		{name: "oversized", reply: func(w http.ResponseWriter, req map[string]any) { answer(w, req, big) }, wantErr: ErrMalformed},
		{name: "wrong id", reply: func(w http.ResponseWriter, req map[string]any) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":999999,"result":null}`)
		}, wantErr: ErrMalformed},
		{name: "string id", reply: func(w http.ResponseWriter, req map[string]any) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"1","result":null}`)
		}, wantErr: ErrMalformed},
		{name: "wrong version", reply: func(w http.ResponseWriter, req map[string]any) {
			id, _ := json.Marshal(req["id"])
			_, _ = io.WriteString(w, `{"jsonrpc":"1.0","id":`+string(id)+`,"result":null}`)
		}, wantErr: ErrMalformed},
		{name: "no result", reply: func(w http.ResponseWriter, req map[string]any) { answer(w, req, ``) }, wantErr: ErrMalformed},
		{name: "unreadable error", reply: func(w http.ResponseWriter, req map[string]any) { answer(w, req, `,"error":"boom"`) }, wantErr: ErrMalformed},
		{name: "batch answer", reply: func(w http.ResponseWriter, req map[string]any) {
			_, _ = io.WriteString(w, `[{"jsonrpc":"2.0","id":1,"result":null}]`)
		}, wantErr: ErrMalformed},
		{name: "truncated body", reply: func(w http.ResponseWriter, req map[string]any) {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0"`)
		}, wantErr: ErrTransport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, calls := rpcServer(t, tc.reply)
			start := time.Now()
			_, err := c.TransactionReceipt(t.Context(), "0x"+strings.Repeat("ab", 32))
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("took %v, want within the 300ms receipt timeout", elapsed)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantErr == nil {
				var ce *CallError
				if !errors.As(err, &ce) || ce.Code != -32000 || strings.ContainsAny(ce.Message, "\n\r") {
					t.Fatalf("err = %#v, want a CallError -32000 on one line", err)
				}
			} else if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			// A CallError carries the provider's own (cleaned) message, which here quotes the path;
			// nothing else may name the URL.
			if leak := strings.Contains(err.Error(), "SECRET-QUERY") || (tc.wantErr != nil && strings.Contains(err.Error(), "SECRET-API-KEY")); leak {
				t.Errorf("error leaks the URL: %v", err)
			}
			if calls.Load() != 1 {
				t.Errorf("%d requests, want 1 (no retries, no redirects)", calls.Load())
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := New(Config{URL: "http://" + addr + secretPath + "?key=SECRET-QUERY"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ChainID(t.Context())
	if !errors.Is(err, ErrTransport) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("err = %v, want ErrTransport without the URL", err)
	}
	if c.Endpoint() != "http://"+addr {
		t.Errorf("Endpoint = %q", c.Endpoint())
	}
}

func TestCancelled(t *testing.T) {
	c, _ := rpcServer(t, func(w http.ResponseWriter, req map[string]any) { answer(w, req, `,"result":"0x1"`) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.ChainID(ctx); !errors.Is(err, ErrTransport) {
		t.Errorf("err = %v, want ErrTransport", err)
	}
}

func TestNewRefusesBadURL(t *testing.T) {
	for _, u := range []string{"", "mainnet.base.org", "ftp://x", "http://", "ws://127.0.0.1:8545"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}
