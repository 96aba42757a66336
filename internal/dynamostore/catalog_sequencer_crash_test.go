package dynamostore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The crash test's child: this test binary run with these set (TestMain runs crashChild
// instead of the tests).
const (
	envCrashChild = "AGENTGATE_SEQ_CRASH_CHILD" // the child's number
	envCrashTable = "AGENTGATE_SEQ_CRASH_TABLE"
	envCrashKey   = "AGENTGATE_SEQ_CRASH_KEY"
	// envCrashAt says where the child kills itself with SIGKILL: "before" an integration's
	// transaction is sent (its events queued, not integrated), "after" one committed (its
	// writers not told), or "" (the parent kills it at a random time).
	envCrashAt = "AGENTGATE_SEQ_CRASH_AT"
)

// TestSequencerCrash: five processes in turn append through the sequencer, four writers
// each, printing every acknowledged append; each is killed with SIGKILL — by the parent at
// a random moment, or by itself just before an integration's transaction is sent or just
// after one committed. Then the sweep (Sequence) integrates what the dead left queued.
// Every acknowledged append is in the log exactly once, no append is there twice, the
// log verifies (no fork: one chain, no gap), the head is its last entry and the queue is
// empty.
func TestSequencerCrash(t *testing.T) {
	s := newSeqStack(t)
	keyPath := t.TempDir() + "/log.key"
	key, err := keysigner.Create(keyPath, keysigner.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	s.key = key
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	modes := []string{"", "before", "after", "", "before"}
	for k, mode := range modes {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), awstest.Env(t)...)
		cmd.Env = append(cmd.Env, envCrashChild+"="+strconv.Itoa(k), envCrashTable+"="+s.st.table, envCrashKey+"="+keyPath, envCrashAt+"="+mode)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		var killer *time.Timer
		if mode == "" {
			killer = time.AfterFunc(time.Duration(1000+rand.IntN(1500))*time.Millisecond, func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		} else {
			// Bounded even if the child never reaches its crash point.
			killer = time.AfterFunc(30*time.Second, func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
		n := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
				acked[id] = true
				n++
			}
		}
		killer.Stop()
		err = cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child %d (%q) was not killed by SIGKILL: %v", k, mode, err)
		}
		t.Logf("child %d (crash %q): %d appends acknowledged, then SIGKILL", k, mode, n)
	}
	if len(acked) == 0 {
		t.Fatal("no append was acknowledged before the kills")
	}
	c := s.catalog(t, dynamostore.SequencerConfig{})
	queued, _, err := c.QueuedAudit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Sequence(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the sweep found %d queue items and wrote %d entries", queued, n)
	recs := s.verify(t, c)
	inLog := map[string]int{}
	for _, r := range recs {
		var b struct {
			Event struct {
				ID string `json:"id"`
			} `json:"event"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		inLog[b.Event.ID]++
	}
	for id, k := range inLog {
		if k != 1 {
			t.Errorf("append %s is in the log %d times", id, k)
		}
	}
	lost := 0
	for id := range acked {
		if inLog[id] != 1 {
			lost++
			t.Errorf("acknowledged append %s is not in the log", id)
		}
	}
	if q, _, _ := c.QueuedAudit(t.Context()); q != 0 {
		t.Errorf("%d queue items left after the sweep", q)
	}
	t.Logf("%d acknowledged, %d in the log, %d lost, %d entries verified", len(acked), len(inLog), lost, len(recs))
}

// crashChild is the crash test's child process (TestMain runs it when envCrashChild is
// set): four writers append through the sequencer, printing "ACK <id>" for each
// acknowledged append, until the parent kills the process, or it kills itself at the
// moment envCrashAt names. It returns an exit status when it cannot start.
func crashChild() int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "crash child: %v\n", err)
		return 2
	}
	child := os.Getenv(envCrashChild)
	key, err := keysigner.Load(os.Getenv(envCrashKey))
	if err != nil {
		return fail(err)
	}
	mode := os.Getenv(envCrashAt)
	var txs sync.Mutex
	sent := 0
	crash := func(stack *middleware.Stack) error {
		if mode == "" {
			return nil
		}
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("crash",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) != "TransactWriteItems" {
					return next.HandleInitialize(ctx, in)
				}
				txs.Lock()
				sent++
				last := sent == 4 // a few integrations first, then the crash
				txs.Unlock()
				if last && mode == "before" {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
				out, md, err := next.HandleInitialize(ctx, in)
				if last && mode == "after" && err == nil {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
				return out, md, err
			}), middleware.Before)
	}
	// The parent's endpoint, region and credentials (awstest.Env), as the SDK reads them.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fail(err)
	}
	var stdout sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		c, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, crash) }),
			Table: os.Getenv(envCrashTable), Sequencer: &dynamostore.SequencerConfig{Log: &audit.Chainer{Signer: key}, StaleAfter: 500 * time.Millisecond, Wait: 10 * time.Second}})
		if err != nil {
			return fail(err)
		}
		wg.Go(func() {
			for i := range 500 {
				id := fmt.Sprintf("%s/%d/%d", child, w, i)
				e := warrant.Event{Type: "decisions_recorded", Actor: "crash-child", At: time.Now().UTC(), Body: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))}
				if err := c.AppendEvents(ctx, []warrant.Event{e}); err != nil {
					fmt.Fprintf(os.Stderr, "child %s writer %d: %v\n", child, w, err)
					continue
				}
				stdout.Lock()
				fmt.Printf("ACK %s\n", id)
				stdout.Unlock()
			}
		})
	}
	wg.Wait()
	// Not reached when the parent or the crash kills it first; a child that ran out of
	// appends waits to be killed (within its minute), so that every child ends the same way.
	<-ctx.Done()
	return 1
}
