package payments

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var servingRE = regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)`)

// TestLockerdBinary runs the real lockerd binary in txid mode against the base chain, as the
// README's "paid daemon" section does, and pays for one pad with a real transfer.
func TestLockerdBinary(t *testing.T) {
	g := baseChain(t)
	accts := g.accounts(t)
	usdc := deployToken(t, g, accts[0])
	tx, status := usdc.transfer(t, accts[0], wallet, 2000)
	if status != "0x1" {
		t.Fatalf("transfer status %s", status)
	}

	goBin := testenv.LookPath(t, "go")
	bin := filepath.Join(t.TempDir(), "lockerd")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/lockerd")
	build.Dir = testenv.RepoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	cmd := exec.Command(bin, "--port", "0", "--db", filepath.Join(t.TempDir(), "locker.db"))
	cmd.Env = append(os.Environ(), "LOCKER_MODE=txid", "PAYMENT_WALLET_ADDRESS="+wallet, "BASE_RPC_URL="+g.URL,
		"USDC_CONTRACT="+usdc.Address, "REQUIRED_USDC_UNITS=2000", "LOCKER_LOG_LEVEL=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	urlc, listening := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"msg":"lockerd listening"`) {
				select {
				case listening <- sc.Text():
				default:
				}
			}
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
	}()
	var base string
	select {
	case base = <-urlc:
	case <-time.After(30 * time.Second):
		t.Fatal("lockerd did not start within 30s")
	}
	d := &daemon{t: t, url: base}
	// The start log states the payment terms (docs/payments.md), the RPC endpoint as its
	// scheme and host only.
	var start struct {
		Config struct {
			Wallet   string `json:"payment_wallet"`
			Contract string `json:"usdc_contract"`
			Units    int64  `json:"required_units"`
			RPC      string `json:"rpc_endpoint"`
		} `json:"config"`
	}
	select {
	case line := <-listening:
		rpc, _ := url.Parse(g.URL)
		if err := json.Unmarshal([]byte(line), &start); err != nil || start.Config.Wallet != wallet || start.Config.Contract != usdc.Address ||
			start.Config.Units != 2000 || start.Config.RPC != rpc.Scheme+"://"+rpc.Host {
			t.Errorf("start log %s: want the wallet, contract, 2000 units and %s://%s", line, rpc.Scheme, rpc.Host)
		}
	case <-time.After(5 * time.Second):
		t.Error("no start log line")
	}

	if r := d.create("-"); r.status != http.StatusPaymentRequired || !strings.Contains(r.header.Get("WWW-Authenticate"), wallet) {
		t.Errorf("no proof = %d %s %q", r.status, r.body, r.header.Get("WWW-Authenticate"))
	}
	if r := d.create(tx); r.status != http.StatusCreated {
		t.Errorf("paid create = %d %s", r.status, r.body)
	}
	if r := d.create(tx); r.status != http.StatusConflict {
		t.Errorf("replay = %d %s", r.status, r.body)
	}
	if status, rpc := d.health(); status != 200 || rpc != `{"network":"base","reachable":true}` {
		t.Errorf("health = %d %s", status, rpc)
	}
}
