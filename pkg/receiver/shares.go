package receiver

import "sync"

// shares counts the body bytes each namespace's receivers are reading, each up to
// max. Only namespaces with a body being read have an entry: at most one per
// connection served.
type shares struct {
	max  int64
	mu   sync.Mutex
	held map[string]int64
}

// take reserves n bytes for namespace, unless that would take it over max.
func (s *shares) take(namespace string, n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[namespace]+n > s.max {
		return false
	}
	s.held[namespace] += n
	return true
}

// give returns n bytes of namespace.
func (s *shares) give(namespace string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[namespace] -= n; s.held[namespace] <= 0 {
		delete(s.held, namespace)
	}
}
