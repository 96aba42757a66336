package warrantaws_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// caller is one set of credentials the gateway stand-in knows: the IAM principal they
// authenticate, and whether its policy allows more than GET (ApproverPolicy against
// AuditorPolicy).
type caller struct {
	secret, arn string
	decide      bool
}

// gateway stands in for API Gateway's AWS_IAM authorizer in front of the approvals
// function: it verifies each request's SigV4 signature (recomputing it over the headers
// the request says it signed, with the caller's secret), applies the caller's policy,
// and hands the function the HTTP API payload 2.0 event with the caller's principal in
// requestContext.authorizer.iam, as the service does.
type gateway struct {
	region  string
	callers map[string]caller
	fn      func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	calls   atomic.Int64
}

func (g *gateway) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv.URL
}

func deny(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "{\"message\":%q}\n", msg)
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	auth := r.Header.Get("Authorization")
	cred, signed, ok := parseAuth(auth)
	if !ok {
		deny(w, "Missing Authentication Token")
		return
	}
	akid, _, _ := strings.Cut(cred, "/")
	c, known := g.callers[akid]
	if !known {
		deny(w, "The security token included in the request is invalid.")
		return
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || time.Since(at).Abs() > 5*time.Minute {
		deny(w, "Signature expired or X-Amz-Date missing")
		return
	}
	// Re-sign exactly what the caller says it signed.
	re, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	re.ContentLength = int64(len(body))
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: c.secret}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, re, hex.EncodeToString(sum[:]), "execute-api", g.region, at); err != nil {
		deny(w, err.Error())
		return
	}
	if subtle.ConstantTimeCompare([]byte(re.Header.Get("Authorization")), []byte(auth)) != 1 {
		deny(w, "The request signature we calculated does not match the signature you provided.")
		return
	}
	if r.Method != http.MethodGet && !c.decide {
		deny(w, "User: "+c.arn+" is not authorized to perform: execute-api:Invoke on resource: "+r.Method+" "+r.URL.Path)
		return
	}
	g.calls.Add(1)
	headers := map[string]string{}
	for k := range r.Header {
		headers[strings.ToLower(k)] = r.Header.Get(k)
	}
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: headers, Body: string(body)}
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = r.Method, r.URL.Path
	ev.RequestContext.RequestID = fmt.Sprintf("gw-%d", g.calls.Load())
	ev.RequestContext.Stage = "$default"
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccessKey: akid, AccountID: "123456789012", UserARN: c.arn}}
	resp, err := g.fn(r.Context(), ev)
	if err != nil {
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		out, _ = base64.StdEncoding.DecodeString(resp.Body)
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// parseAuth splits "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=a;b, Signature=…".
func parseAuth(h string) (cred string, signed []string, ok bool) {
	rest, found := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !found {
		return "", nil, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = strings.Split(v, ";")
		}
	}
	return cred, signed, cred != "" && len(signed) > 0
}

// decodeJSON is json.Unmarshal that fails the test.
func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
}
