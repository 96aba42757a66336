package awsapp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestSignedClient(t *testing.T) {
	var auth, date, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, date = r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date")
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	resp, err := SignedClient(cfg).Post(srv.URL+"/v1/servers/weather/tools/t/decisions", "application/json", strings.NewReader(`{"decision":"approved"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/us-east-1/execute-api/aws4_request") || date == "" || body != `{"decision":"approved"}` {
		t.Errorf("Authorization %q, X-Amz-Date %q, body %q", auth, date, body)
	}
}

func TestCheckpointSourceURLs(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1"}
	for _, ok := range []string{"s3://dev-toolwarrant-checkpoints-1-us-east-1", "s3://b-1/checkpoints/"} {
		if _, err := CheckpointSource(t.Context(), cfg, ok, false); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"s3://", "https://b/", "s3://b/other/", "/tmp/dir"} {
		if _, err := CheckpointSource(t.Context(), cfg, bad, false); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
