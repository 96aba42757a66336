//go:build !unix

package mcpclient

import "os"

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return false
}
