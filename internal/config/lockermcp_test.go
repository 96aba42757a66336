package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadLockerMCP(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    LockerMCP
		wantErr []string
	}{
		{name: "url and default transport", env: map[string]string{"LOCKER_URL": "http://127.0.0.1:8000"},
			want: LockerMCP{URL: "http://127.0.0.1:8000", TicketTransport: TicketHeader}},
		{name: "trailing slash and path prefix kept", env: map[string]string{"LOCKER_URL": " https://locker.example/padlock/ ", "LOCKER_TICKET_TRANSPORT": " Query "},
			want: LockerMCP{URL: "https://locker.example/padlock", TicketTransport: TicketQuery}},
		{name: "header explicit", env: map[string]string{"LOCKER_URL": "http://[::1]:9", "LOCKER_TICKET_TRANSPORT": "header"},
			want: LockerMCP{URL: "http://[::1]:9", TicketTransport: TicketHeader}},
		{name: "missing url", env: nil, wantErr: []string{"LOCKER_URL is not set"}},
		{name: "not http", env: map[string]string{"LOCKER_URL": "ftp://host"}, wantErr: []string{"must be an http:// or https:// URL"}},
		{name: "no scheme", env: map[string]string{"LOCKER_URL": "127.0.0.1:8000"}, wantErr: []string{"LOCKER_URL"}},
		{name: "no host", env: map[string]string{"LOCKER_URL": "http:///x"}, wantErr: []string{"has no host"}},
		{name: "credentials refused without echo", env: map[string]string{"LOCKER_URL": "http://u:s3cret@host"}, wantErr: []string{"must not contain credentials"}},
		{name: "query refused", env: map[string]string{"LOCKER_URL": "http://host/?ticket=abc"}, wantErr: []string{"must not have a query"}},
		{name: "unknown transport refused", env: map[string]string{"LOCKER_URL": "http://host", "LOCKER_TICKET_TRANSPORT": "cookie"},
			wantErr: []string{`LOCKER_TICKET_TRANSPORT="cookie" is not a transport`}},
		{name: "all problems together", env: map[string]string{"LOCKER_TICKET_TRANSPORT": "x"},
			wantErr: []string{"LOCKER_URL is not set", "LOCKER_TICKET_TRANSPORT"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadLockerMCP(env(tc.env))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error repeats a credential: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
