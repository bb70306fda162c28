package procs

import "syscall"

// setParentDeathSignal kills the process when the harness dies without
// stopping it (interrupted twice, killed by a timeout).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
