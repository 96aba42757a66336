package awstest

import "syscall"

// sysProcAttr makes the kernel kill moto_server if the test binary dies before Main stops it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
