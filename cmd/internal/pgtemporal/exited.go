package pgtemporal

// Exited reports whether the server process ended although neither Kill nor
// Stop ended it (it crashed, or gave up), so that a supervising harness can
// Restart it as an orchestrator would.
func (s *Server) Exited() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false
	}
	select {
	case <-s.proc.done:
		return true
	default:
		return false
	}
}
