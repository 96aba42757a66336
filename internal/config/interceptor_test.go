package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/enforce"
)

func TestLoadInterceptor(t *testing.T) {
	role := "arn:aws:iam::123456789012:role/dev-interceptor"
	tests := []struct {
		name string
		env  map[string]string
		want Interceptor
		errs []string // each must appear in the error; none: no error
	}{
		{name: "defaults", env: map[string]string{"INTERCEPTOR_ROLE_ARN": role},
			want: Interceptor{Role: role, RecordEvery: time.Minute, Refresh: 5 * time.Second, Staleness: 30 * time.Second}},
		{name: "everything set", env: map[string]string{"INTERCEPTOR_ROLE_ARN": role, "INTERCEPTOR_SERVERS": " weather, search ", "INTERCEPTOR_SHADOW": "1",
			"INTERCEPTOR_RECORD_EVERY": "10s", "INTERCEPTOR_REFRESH": "2s", "INTERCEPTOR_STALENESS": "20s"},
			want: Interceptor{Role: role, Servers: []string{"weather", "search"}, Shadow: true, RecordEvery: 10 * time.Second, Refresh: 2 * time.Second, Staleness: 20 * time.Second}},
		{name: "every problem at once", env: map[string]string{"INTERCEPTOR_SERVERS": "ok,bad name,ok", "INTERCEPTOR_SHADOW": "maybe",
			"INTERCEPTOR_RECORD_EVERY": "10ms", "INTERCEPTOR_REFRESH": "soon", "INTERCEPTOR_STALENESS": "-1s"},
			errs: []string{"INTERCEPTOR_ROLE_ARN", `INTERCEPTOR_SERVERS: server "ok" given twice`, "INTERCEPTOR_SERVERS: ", "INTERCEPTOR_SHADOW",
				"INTERCEPTOR_RECORD_EVERY", "INTERCEPTOR_REFRESH", "INTERCEPTOR_STALENESS"}},
		{name: "staleness under refresh", env: map[string]string{"INTERCEPTOR_ROLE_ARN": role, "INTERCEPTOR_REFRESH": "10s", "INTERCEPTOR_STALENESS": "5s"},
			errs: []string{"INTERCEPTOR_STALENESS=5s is shorter than INTERCEPTOR_REFRESH=10s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadInterceptor(func(k string) string { return tc.env[k] })
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got.Role != tc.want.Role || !slices.Equal(got.Servers, tc.want.Servers) || got.Shadow != tc.want.Shadow ||
					got.RecordEvery != tc.want.RecordEvery || got.Refresh != tc.want.Refresh || got.Staleness != tc.want.Staleness {
					t.Errorf("LoadInterceptor = %+v, want %+v", got, tc.want)
				}
				return
			}
			for _, want := range tc.errs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not say %q", err, want)
				}
			}
		})
	}
}

// TestInterceptorDefaultsAreTheCores: the interceptor's defaults are internal/enforce's.
func TestInterceptorDefaultsAreTheCores(t *testing.T) {
	if DefaultInterceptorRefresh != enforce.DefaultRefresh || DefaultInterceptorStaleness != enforce.DefaultStaleness || DefaultInterceptorRecordEvery != enforce.DefaultRecordEvery {
		t.Errorf("interceptor defaults %s/%s/%s, the core's %s/%s/%s", DefaultInterceptorRefresh, DefaultInterceptorStaleness, DefaultInterceptorRecordEvery,
			enforce.DefaultRefresh, enforce.DefaultStaleness, enforce.DefaultRecordEvery)
	}
}
