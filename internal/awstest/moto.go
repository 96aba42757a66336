package awstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// Region is the region the harness uses when none is configured.
const Region = "us-east-1"

// motoStartTimeout bounds how long the harness waits for moto_server to answer.
const motoStartTimeout = 30 * time.Second

// local is the moto_server this binary starts on first use.
var local = &Local{Pkg: "awstest", What: "the moto_server",
	Start: func() (string, func(), error) {
		m, err := startMoto()
		if err != nil {
			return "", nil, err
		}
		return m.url, m.stop, nil
	},
	Failed: func(t testing.TB, err error) {
		t.Helper()
		testenv.Missing(t, testenv.AWS, "no AWS endpoint: AWS_ENDPOINT_URL is unset and "+err.Error())
	},
}

// moto is a moto_server child process and the serializing proxy in front of it.
type moto struct {
	cmd   *exec.Cmd
	proxy *http.Server
	url   string // the proxy's URL: what clients use
}

// Main runs the tests and then stops the moto_server this binary started, by PID. Call it
// from TestMain and pass its result to os.Exit.
func Main(m *testing.M) int { return local.Run(m, (*testing.M).Run) }

// Endpoint returns the DynamoDB-compatible endpoint URL: AWS_ENDPOINT_URL when set, else the
// URL of a moto_server started for this test binary. It skips or fails the test (see
// testenv.Missing) when no endpoint can be had.
func Endpoint(t testing.TB) string {
	t.Helper()
	return local.Endpoint(t)
}

// External reports whether the endpoint came from AWS_ENDPOINT_URL rather than a moto_server
// the harness started (tests that rely on the harness's serializing proxy check it).
func External() bool { return os.Getenv("AWS_ENDPOINT_URL") != "" }

// Env returns the environment variables that point a child process (the Lambda bootstrap
// under aws-lambda-rie) at the same endpoint with the same credentials.
func Env(t testing.TB) []string {
	t.Helper()
	ep := Endpoint(t)
	env := []string{"AWS_ENDPOINT_URL=" + ep, "AWS_REGION=" + CurrentRegion(), "AWS_EC2_METADATA_DISABLED=true"}
	if External() && os.Getenv("AWS_ACCESS_KEY_ID") != "" {
		env = append(env, "AWS_ACCESS_KEY_ID="+os.Getenv("AWS_ACCESS_KEY_ID"), "AWS_SECRET_ACCESS_KEY="+os.Getenv("AWS_SECRET_ACCESS_KEY"))
		if tok := os.Getenv("AWS_SESSION_TOKEN"); tok != "" {
			env = append(env, "AWS_SESSION_TOKEN="+tok)
		}
	} else {
		c := admin()
		env = append(env, "AWS_ACCESS_KEY_ID="+c.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+c.SecretAccessKey)
	}
	return env
}

// Config returns an aws.Config for Endpoint. With AWS_ENDPOINT_URL it loads the default
// chain (static test credentials when none are set, as LocalStack accepts any); for moto it
// signs as the harness's administrator (iam.go): what deploys the resources. A function
// under test runs as its role instead (Role). The SDK's default HTTP client is kept: replacing it while
// AWS_CA_BUNDLE is set makes LoadDefaultConfig panic.
func Config(t testing.TB) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(CurrentRegion())}
	switch {
	case !External():
		c := admin()
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	case os.Getenv("AWS_ACCESS_KEY_ID") == "":
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		t.Fatalf("awstest: load AWS config: %v", err)
	}
	cfg.BaseEndpoint = aws.String(ep)
	return cfg
}

func startMoto() (*moto, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, errors.New("moto_server is not on PATH (pip install 'moto[server]')")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		m, err := launch(bin, port)
		if err == nil {
			return m, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func launch(bin string, port int) (*moto, error) {
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = nil, nil // moto logs every request; keep test output readable
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto_server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	m := &moto{cmd: cmd}
	deadline := time.Now().Add(motoStartTimeout)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(target.String() + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case werr := <-exited:
			return nil, fmt.Errorf("moto_server on port %d exited at start: %v", port, werr)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.kill(exited)
			return nil, fmt.Errorf("moto_server did not answer on port %d within %s", port, motoStartTimeout)
		}
	}
	if err := m.serveProxy(target); err != nil {
		m.kill(exited)
		return nil, err
	}
	if err := enableIAM(target.String()); err != nil {
		m.kill(exited)
		return nil, fmt.Errorf("moto_server: enforce IAM: %w", err)
	}
	go func() { err := <-exited; _ = err }() // reap; stop() signals by PID
	return m, nil
}

// serveProxy puts a loopback reverse proxy in front of moto that forwards one request at a
// time, through the guard (guard.go: IAM for DynamoDB, DynamoDB's limits, S3's 403). moto_server serves each request on its own thread, and its TransactWriteItems takes
// no lock: it evaluates every condition, applies the writes, and on cancellation restores a
// deep copy of the whole table taken when it began. Two concurrent transactions can then both
// pass a condition, or one's rollback can erase the other's committed writes. DynamoDB itself
// is serializable per item; serializing moto's requests restores that guarantee, so the
// concurrency tests check our check-and-set logic rather than moto's threading.
func (m *moto) serveProxy(target *url.URL) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the moto proxy: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	g := &guard{motoURL: target.String()}
	var one sync.Mutex
	m.proxy = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			one.Lock()
			defer one.Unlock()
			g.serve(w, r, rp.ServeHTTP)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = m.proxy.Serve(l) }()
	m.url = "http://" + l.Addr().String()
	return nil
}

func (m *moto) kill(exited chan error) {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		_ = err // moto's exit status after SIGTERM says nothing useful
	case <-time.After(5 * time.Second):
		_ = m.cmd.Process.Kill()
	}
}

// stop ends the proxy and the moto_server process (by its PID: SIGTERM, then SIGKILL).
func (m *moto) stop() {
	if m.proxy != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = m.proxy.Shutdown(ctx)
		cancel()
	}
	p := m.cmd.Process
	_ = p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := p.Signal(syscall.Signal(0)); err != nil {
			return // gone
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.Kill()
}
