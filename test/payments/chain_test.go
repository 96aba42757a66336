package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/evmrpc"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// ganache is one running ganache process on loopback.
type ganache struct {
	URL     string
	ChainID uint64
	cmd     *exec.Cmd
	out     *syncBuffer
	rpc     *evmrpc.Client
	done    chan struct{}
}

// syncBuffer collects a child's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 64<<10 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

const (
	startAttempts = 3                // a free port can be taken between probe and bind
	startTimeout  = 60 * time.Second // ganache's cold start, per attempt
)

// ganacheCommand returns node and ganache's CLI script, or skips/fails the test as
// testenv.Missing does.
func ganacheCommand(t testing.TB) (node, cli string) {
	t.Helper()
	return testenv.LookPath(t, "node"), filepath.Join(testenv.NodeModule(t, "ganache"), "dist", "node", "cli.js")
}

// startGanache starts ganache for chainID on a free loopback port and waits until it answers
// eth_chainId. stop must be called (by PID) when done.
func startGanache(node, cli string, chainID uint64) (*ganache, error) {
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		g, err := tryGanache(node, cli, chainID)
		if err == nil {
			return g, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func tryGanache(node, cli string, chainID uint64) (*ganache, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	g := &ganache{URL: "http://127.0.0.1:" + strconv.Itoa(port), ChainID: chainID, out: &syncBuffer{}, done: make(chan struct{})}
	g.cmd = exec.Command(node, cli,
		"--server.host", "127.0.0.1", "--server.port", strconv.Itoa(port),
		"--chain.chainId", strconv.FormatUint(chainID, 10), "--chain.networkId", strconv.FormatUint(chainID, 10),
		"--wallet.deterministic", "--wallet.totalAccounts", "10", "--logging.quiet",
		"--miner.instamine", "eager", "--chain.vmErrorsOnRPCResponse", "false")
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	g.cmd.Env = append(os.Environ(), "NODE_OPTIONS=") // no inherited --inspect or loaders
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ganache: %w", err)
	}
	go func() { _ = g.cmd.Wait(); close(g.done) }()
	if g.rpc, err = evmrpc.New(evmrpc.Config{URL: g.URL, ReceiptTimeout: 10 * time.Second}); err != nil {
		g.stop()
		return nil, err
	}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-g.done:
			return nil, fmt.Errorf("ganache exited during start-up:\n%s", g.out)
		case <-time.After(150 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		id, err := g.rpc.ChainID(ctx)
		cancel()
		if err == nil {
			if id != chainID {
				g.stop()
				return nil, fmt.Errorf("ganache reports chain %d, want %d", id, chainID)
			}
			return g, nil
		}
	}
	g.stop()
	return nil, fmt.Errorf("ganache did not answer within %v:\n%s", startTimeout, g.out)
}

// stop kills the ganache process by its PID and waits (bounded) for it to exit.
func (g *ganache) stop() {
	if g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// call makes a JSON-RPC call and decodes its result into out.
func (g *ganache) call(t testing.TB, out any, method string, params ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if params == nil {
		params = []any{}
	}
	raw, err := g.rpc.Call(ctx, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s result %s: %v", method, raw, err)
		}
	}
}

func (g *ganache) accounts(t testing.TB) []string {
	t.Helper()
	var accts []string
	g.call(t, &accts, "eth_accounts")
	if len(accts) < 6 {
		t.Fatalf("ganache has %d accounts", len(accts))
	}
	return accts
}

// txReceipt is the part of a receipt the tests read back.
type txReceipt struct {
	Status          string `json:"status"`
	ContractAddress string `json:"contractAddress"`
	Logs            []struct {
		Address string   `json:"address"`
		Topics  []string `json:"topics"`
	} `json:"logs"`
}

// send submits a transaction from an unlocked ganache account and returns its hash and
// receipt. The gas is fixed, so a reverting call is mined (status 0x0) rather than refused
// at estimation.
func (g *ganache) send(t testing.TB, from, to, data string) (string, txReceipt) {
	t.Helper()
	tx := map[string]string{"from": from, "data": data, "gas": "0x2dc6c0"}
	if to != "" {
		tx["to"] = to
	}
	var hash string
	g.call(t, &hash, "eth_sendTransaction", tx)
	var r *txReceipt
	for i := 0; i < 100 && r == nil; i++ { // eager instamine: normally there at once
		g.call(t, &r, "eth_getTransactionReceipt", hash)
		if r == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if r == nil {
		t.Fatalf("transaction %s not mined", hash)
	}
	return hash, *r
}

// contract is the compiled test ERC-20 (test/fixtures/erc20).
type contract struct {
	Solc     string            `json:"solc"`
	Bytecode string            `json:"bytecode"`
	Methods  map[string]string `json:"methods"`
}

var (
	compileOnce sync.Once
	compiled    contract
	compileErr  error
)

// compileToken compiles TestToken.sol once per test binary with the pinned solc.
func compileToken(t testing.TB) contract {
	t.Helper()
	node := testenv.LookPath(t, "node")
	testenv.NodeModule(t, "solc")
	compileOnce.Do(func() {
		script := filepath.Join(testenv.RepoRoot(t), "test", "fixtures", "erc20", "compile.js")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, node, script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			compileErr = fmt.Errorf("compile TestToken.sol: %v\n%s", err, stderr.String())
			return
		}
		compileErr = json.Unmarshal(out, &compiled)
	})
	if compileErr != nil {
		t.Fatal(compileErr)
	}
	return compiled
}

// word is a 32-byte ABI word for an address or a number.
func word(v any) string {
	switch x := v.(type) {
	case string:
		return strings.Repeat("0", 24) + strings.ToLower(strings.TrimPrefix(x, "0x"))
	case int:
		return fmt.Sprintf("%064x", x)
	case *big.Int:
		return fmt.Sprintf("%064x", x)
	}
	panic(fmt.Sprintf("word: %T", v))
}

// token is a deployed TestToken.
type token struct {
	g       *ganache
	c       contract
	Address string
	Owner   string
}

// deployToken deploys a TestToken whose supply belongs to owner.
func deployToken(t testing.TB, g *ganache, owner string) *token {
	t.Helper()
	c := compileToken(t)
	_, r := g.send(t, owner, "", c.Bytecode+word(1_000_000_000_000))
	if r.Status != "0x1" || r.ContractAddress == "" {
		t.Fatalf("deploy: status %s, address %q", r.Status, r.ContractAddress)
	}
	return &token{g: g, c: c, Address: r.ContractAddress, Owner: owner}
}

// transfer sends amount from from to to and returns the transaction hash and its status.
func (tk *token) transfer(t testing.TB, from, to string, amount int) (string, string) {
	t.Helper()
	hash, r := tk.g.send(t, from, tk.Address, "0x"+tk.c.Methods["transfer(address,uint256)"]+word(to)+word(amount))
	return hash, r.Status
}

// batch sends several transfers from the owner in one transaction, in order.
func (tk *token) batch(t testing.TB, to []string, amounts []int) string {
	t.Helper()
	n := len(to)
	var b strings.Builder
	b.WriteString("0x" + tk.c.Methods["batchTransfer(address[],uint256[])"])
	b.WriteString(word(64) + word(64+32*(n+1)))
	b.WriteString(word(n))
	for _, a := range to {
		b.WriteString(word(a))
	}
	b.WriteString(word(n))
	for _, a := range amounts {
		b.WriteString(word(a))
	}
	hash, r := tk.g.send(t, tk.Owner, tk.Address, b.String())
	if r.Status != "0x1" || len(r.Logs) != n {
		t.Fatalf("batch: status %s, %d logs", r.Status, len(r.Logs))
	}
	return hash
}
