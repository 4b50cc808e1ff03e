package checkpoint

// SetTestHook has w tell fn each step of a two-phase restore, until undo
// is called.
func SetTestHook(w *Workspace, fn func(step string)) (undo func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.steps = nil
	}
}
