package changefeed

// HubReady is closed once the module's hub knows where it starts; nil
// when it has no hub.
func (f *Feed) HubReady(tenantID, moduleID string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h := f.hubs[tenantID+"/"+moduleID]; h != nil {
		return h.ready
	}
	return nil
}
