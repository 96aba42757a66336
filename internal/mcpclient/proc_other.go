//go:build !unix

package mcpclient

import "os/exec"

// setProcessGroup does nothing where process groups don't exist; the SDK still stops the
// child itself.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(int) {}
