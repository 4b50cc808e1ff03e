package checkpoint

// SetTestHook sets the hook called at each step of a two-phase restore,
// until undo is called.
func SetTestHook(fn func(step string)) (undo func()) {
	testHook = fn
	return func() { testHook = nil }
}
