package main

import (
	"syscall"
	"time"
)

// until waits for at with the kernel's nanosleep. Go's own timers sleep in the network
// poller, whose epoll_wait counts whole milliseconds on Linux: a 440 µs time.Sleep woke
// 692-694 µs late at the median here, a nanosleep 106-108 µs late (BenchmarkPacing; at
// 2,000 requests a second the next request is due 500 µs after the last). Lateness is
// measured, never hidden: every latency is taken from at.
func until(at time.Time) {
	for {
		d := time.Until(at)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		_ = syscall.Nanosleep(&ts, nil) // interrupted: the loop sleeps the rest
	}
}
