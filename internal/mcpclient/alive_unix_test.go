//go:build unix

package mcpclient

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// alive reports whether pid is a running process. A zombie (exited, not yet reaped by
// whoever inherited it) counts as gone: it runs nothing and holds no resources but its
// process table slot.
func alive(pid int) bool {
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Format: pid (comm) state ...; comm may contain spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
	} else if _, err := os.Stat("/proc/self/stat"); err == nil {
		return false // /proc works and has no entry for pid
	}
	return syscall.Kill(pid, 0) == nil
}
