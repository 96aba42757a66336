package config

import (
	"strings"
	"testing"
)

func TestLoadAWS(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    AWS
		wantErr []string
	}{
		{name: "table only", env: map[string]string{"PADS_TABLE": " dev-agentgate-pads "}, want: AWS{PadsTable: "dev-agentgate-pads", MaxAttempts: 3}},
		{name: "attempts", env: map[string]string{"PADS_TABLE": "pads", "PADS_DYNAMODB_MAX_ATTEMPTS": "5"}, want: AWS{PadsTable: "pads", MaxAttempts: 5}},
		{name: "missing table", env: nil, wantErr: []string{"PADS_TABLE is not set"}},
		{name: "bad table name", env: map[string]string{"PADS_TABLE": "a b"}, wantErr: []string{`PADS_TABLE="a b"`}},
		{name: "all problems together", env: map[string]string{"PADS_DYNAMODB_MAX_ATTEMPTS": "0"},
			wantErr: []string{"PADS_TABLE", "PADS_DYNAMODB_MAX_ATTEMPTS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadAWS(env(tc.env))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("LoadAWS = %+v, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("LoadAWS = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
