package pgtemporal

import "syscall"

// setParentDeathSignal kills the server when the process that started it
// dies without calling Stop (a test binary killed by its timeout, a bench
// interrupted twice). Linux ties the signal to the starting thread, and Go
// ends a thread only when a goroutine locked to it exits, which the callers
// of this package do not do.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
