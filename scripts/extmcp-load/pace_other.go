//go:build !linux

package main

import "time"

// until waits for at. (On Linux the kernel's nanosleep is used: see pace_linux.go.)
func until(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}
