//go:build unix

package mcpclient

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the child in a process group of its own, so that everything it
// starts (npx → node, a shell wrapper → the server) can be stopped together.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills whatever is left of the child's process group once the child itself
// has been stopped and reaped. A group ID is not reused while any member lives, so this only
// reaches processes the child started.
func killProcessGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
