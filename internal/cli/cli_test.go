package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		runErr   error
		wantCode int
		wantErr  string
	}{
		{name: "ok", args: []string{}, wantCode: ExitOK},
		{name: "found is quiet", args: []string{}, runErr: Found(), wantCode: ExitFound},
		{name: "found with message", args: []string{}, runErr: Exit(ExitFound, errors.New("drift in 2 tools")), wantCode: ExitFound, wantErr: "t: drift in 2 tools\n"},
		{name: "plain error exits 2", args: []string{}, runErr: errors.New("open x: no such file\nmore"), wantCode: ExitUsage, wantErr: "t: open x: no such file; more\n"},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: ExitUsage, wantErr: "t: unknown flag: --nope (see 't --help')\n"},
		{name: "dash-leading value", args: []string{"--ticket", "-abc"}, wantCode: ExitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ticket string
			root := &cobra.Command{Use: "t", RunE: func(*cobra.Command, []string) error { return tc.runErr }}
			root.Flags().StringVar(&ticket, "ticket", "", "")
			var out, errb bytes.Buffer
			got := Run(t.Context(), root, tc.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
			if got != tc.wantCode {
				t.Errorf("code = %d, want %d (stderr %q)", got, tc.wantCode, errb.String())
			}
			if errb.String() != tc.wantErr {
				t.Errorf("stderr = %q, want %q", errb.String(), tc.wantErr)
			}
		})
	}
}
